//! Where events go: the [`EventSink`] trait and an append-only JSONL file sink.
//!
//! ```
//! use policy_runtime::audit::{EventSink, JsonlSink};
//! use policy_runtime::event::{Event, EventKind};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("audit.jsonl");
//! let sink = JsonlSink::open(&path)?;
//! sink.record(&Event::new("i", "c", "t", "h", EventKind::Approved { approver: "me".into() }));
//! let text = std::fs::read_to_string(&path)?;
//! assert_eq!(text.lines().count(), 1);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::event::Event;

/// Receives every event the registry emits.
pub trait EventSink: Send + Sync {
    /// Records one event. Sinks must not panic; they report their own I/O failures.
    fn record(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync> EventSink for F {
    fn record(&self, event: &Event) {
        self(event)
    }
}

/// Appends one JSON line per event to a file opened with `O_APPEND`.
///
/// Each line is written with a single `write` call, so concurrent writers (even in other
/// processes) never interleave inside a line. A failed write is remembered and reported by
/// [`JsonlSink::take_error`] instead of being lost silently.
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    file: Mutex<File>,
    error: Mutex<Option<std::io::Error>>,
}

impl JsonlSink {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<JsonlSink> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(JsonlSink {
            path,
            file: Mutex::new(file),
            error: Mutex::new(None),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first write error since the last call, if any.
    pub fn take_error(&self) -> Option<std::io::Error> {
        self.error.lock().ok()?.take()
    }
}

impl EventSink for JsonlSink {
    fn record(&self, event: &Event) {
        let mut line = serde_json::to_vec(event).expect("events serialize");
        line.push(b'\n');
        let result = match self.file.lock() {
            Ok(mut f) => f.write_all(&line),
            Err(_) => Err(std::io::Error::other("audit sink lock poisoned")),
        };
        if let Err(e) = result {
            if let Ok(mut slot) = self.error.lock() {
                slot.get_or_insert(e);
            }
        }
    }
}

/// Keeps events in memory; handy for tests and for printing a trace.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    events: Arc<Mutex<Vec<Event>>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A copy of the events so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl EventSink for MemorySink {
    fn record(&self, event: &Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}
