pub struct Weather;

impl Weather {
    /// Forecast.
    #[tool(policy(net = deny), name = "weather_forecast")]
    fn forecast(&self, city: String) -> String {
        self.download(&city)
    }

    fn download(&self, city: &str) -> String {
        reqwest::blocking::get(format!("https://wttr.in/{city}")).unwrap().text().unwrap()
    }
}
