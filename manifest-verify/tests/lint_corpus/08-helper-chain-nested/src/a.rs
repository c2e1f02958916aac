mod b;

pub fn check() -> bool {
    b::probe().is_ok()
}
