//! The policy's objects are read as objects, never as arrays.
//!
//! serde's derived structs also accept a sequence of field values, so `"fs": []` or a tool
//! written as `[]` would load as an empty (unspecified) part instead of an error. Every object
//! of a manifest or policy file goes through [`map_only`], which accepts a JSON object or TOML
//! table and says, in the manifest's terms, what was expected otherwise.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// An object of the manifest, with the words an error uses for it.
pub(crate) trait Object {
    /// What a value of this place must be, e.g. "an `fs` object with `read` and `write` lists".
    const EXPECTED: &'static str;
}

/// Deserializes `T` from an object (map) only.
pub(crate) fn map_only<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Object,
{
    struct MapVisitor<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de> + Object> Visitor<'de> for MapVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(T::EXPECTED)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(MapVisitor(PhantomData))
}

/// A [`map_only`] value, for the top level of a document.
pub(crate) struct MapOnly<T>(pub(crate) T);

impl<'de, T: Deserialize<'de> + Object> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        map_only(d).map(MapOnly)
    }
}
