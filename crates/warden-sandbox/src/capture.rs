//! A command's captured output: read on threads, each stream kept up to its limit (the first
//! bytes of a command that ends, the last of one running in the background).

use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};

/// The last `limit` bytes of a stream, and how many came before them.
#[derive(Debug)]
pub(crate) struct Tail {
    limit: usize,
    inner: Mutex<(std::collections::VecDeque<u8>, u64)>,
}

impl Tail {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            inner: Mutex::new((std::collections::VecDeque::new(), 0)),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (kept, dropped) = &mut *inner;
        kept.extend(bytes);
        let over = kept.len().saturating_sub(self.limit);
        kept.drain(..over);
        *dropped += over as u64;
    }

    /// What came after `cursor`, moving it to the end; true if some of it was dropped already.
    pub(crate) fn since(&self, cursor: &mut u64) -> (Vec<u8>, bool) {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (kept, dropped) = &*inner;
        let lost = *cursor < *dropped;
        let from = usize::try_from(cursor.saturating_sub(*dropped)).unwrap_or(usize::MAX);
        let new: Vec<u8> = kept.iter().skip(from).copied().collect();
        *cursor = dropped + kept.len() as u64;
        (new, lost)
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).1
    }
}

pub(crate) fn tail_reader(
    mut stream: impl Read + Send + 'static,
    tail: &Arc<Tail>,
) -> std::thread::JoinHandle<()> {
    let tail = Arc::clone(tail);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            tail.push(&buf[..n]);
        }
    })
}

/// The threads reading a child's captured stdout and stderr.
pub(crate) struct Readers([Option<Reading>; 2]);

/// A thread reading one stream: the bytes kept, and whether more came than were kept.
type Reading = std::thread::JoinHandle<(Vec<u8>, bool)>;

impl Readers {
    /// Starts reading whichever of a command's stdout and stderr are piped, keeping at most
    /// `output_bytes` of each.
    pub(crate) fn start(streams: [Option<std::fs::File>; 2], output_bytes: Option<u64>) -> Self {
        let limit = output_bytes.map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX));
        Self(streams.map(|s| s.map(|s| reader(s, limit))))
    }

    /// What each stream gave, and whether it was cut at the limit; empty for a stream not piped.
    pub(crate) fn join(self) -> [(Vec<u8>, bool); 2] {
        self.0
            .map(|r| r.and_then(|h| h.join().ok()).unwrap_or_default())
    }
}

/// Reads a stream to its end on a thread, keeping at most `limit` bytes: memory stays bounded
/// under a flood, and the writer never blocks on a full pipe.
fn reader(mut stream: impl Read + Send + 'static, limit: usize) -> Reading {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    truncated |= n > room;
                }
            }
        }
        (kept, truncated)
    })
}
