pub fn bell() -> bool {
    std::process::Command::new("notify-send").status().is_ok()
}
