mod disk;
pub use disk::put;
