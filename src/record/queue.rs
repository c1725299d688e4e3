//! The bounded queue between the forwarding threads and the recorder thread.
//!
//! # Invariant: lossless, bounded by bytes
//!
//! Every record pushed is delivered, in order. The queue holds at most [`RECORD_BUFFER_BYTES`] of
//! line bytes: when the recorder falls that far behind, `push` waits, and so forwarding slows
//! down rather than dropping a record. A single record larger than the whole budget is still
//! accepted once the queue is empty, so a 64 MiB line cannot deadlock it.
//!
//! The byte budget is why this is not `std::sync::mpsc::sync_channel`: a bound on the number of
//! items would let a few huge lines take gigabytes.
//!
//! # Wake-ups cost the session
//!
//! A push wakes the consumer only when it waits for that push: when it waits for any item, or,
//! while it lingers to fill a batch ([`ByteBoundedQueue::pop_batch_lingering`]), when the batch
//! is full. A pop wakes producers only when one waits for room. On a busy machine every futex
//! wake is a system call and often a context switch taken from the session's threads.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How far the recorder may fall behind before forwarding waits: generous, so that a burst
/// (a whole file read back in `_meta`, a long streamed answer) never slows the session.
pub(crate) const RECORD_BUFFER_BYTES: usize = 16 * 1024 * 1024;

/// Something that knows its size in bytes, as counted against the budget.
pub(crate) trait ByteSize {
    fn size(&self) -> usize;
}

pub(crate) struct ByteBoundedQueue<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    bytes: usize,
    closed: bool,
    /// Items ever pushed: numbers items in queue order.
    pushed: u64,
    /// What the consumer waits for, if it waits.
    consumer: Consumer,
    /// Producers waiting for room.
    producers_waiting: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Consumer {
    Busy,
    /// Waits for any item.
    WaitsForAny,
    /// Lingers until this many items or bytes are queued.
    WaitsForBatch {
        items: usize,
        bytes: usize,
    },
}

impl<T> State<T> {
    fn consumer_wants_wake(&self) -> bool {
        match self.consumer {
            Consumer::Busy => false,
            Consumer::WaitsForAny => !self.items.is_empty(),
            Consumer::WaitsForBatch { items, bytes } => {
                self.items.len() >= items || self.bytes >= bytes
            }
        }
    }
}

impl<T: ByteSize> ByteBoundedQueue<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                bytes: 0,
                closed: false,
                pushed: 0,
                consumer: Consumer::Busy,
                producers_waiting: 0,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity,
        }
    }

    /// Adds an item, waiting while the queue is over its byte budget.
    pub(crate) fn push(&self, item: T) {
        self.push_numbered(item.size(), |_| item);
    }

    /// Adds the item `make` builds from its number in queue order (0, 1, 2, ...), so that several
    /// producers get numbers that match the order the consumer sees. `size` is the item's size.
    pub(crate) fn push_numbered(&self, size: usize, make: impl FnOnce(u64) -> T) {
        let mut make = Some(make);
        self.push_numbered_batch(size, 1, |number, _| {
            (make.take().expect("called once"))(number)
        });
    }

    /// Adds `count` items at once (one lock, one wake-up: a run of small lines costs one queue
    /// operation, not one per line). `make(number, index)` builds the item at `index`; `size`
    /// is their total size.
    pub(crate) fn push_numbered_batch(
        &self,
        size: usize,
        count: usize,
        mut make: impl FnMut(u64, usize) -> T,
    ) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !state.items.is_empty() && state.bytes + size > self.capacity {
            // A lingering consumer must not wait for a batch that no longer fits.
            if state.consumer != Consumer::Busy {
                self.not_empty.notify_one();
            }
            state.producers_waiting += 1;
            state = self.not_full.wait(state).unwrap_or_else(|e| e.into_inner());
            state.producers_waiting -= 1;
        }
        for index in 0..count {
            let item = make(state.pushed, index);
            state.pushed += 1;
            state.bytes += item.size();
            state.items.push_back(item);
        }
        let wake = state.consumer_wants_wake();
        drop(state);
        if wake {
            self.not_empty.notify_one();
        }
    }

    /// No more items will be pushed; `pop_batch` returns what is left, then nothing.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.not_empty.notify_all();
    }

    /// Waits for at least one item, then takes up to `max` items, stopping once `max_bytes` are
    /// taken. Returns `false` once the queue is closed and drained. With a `timeout`, it may also
    /// return `true` with nothing taken.
    pub(crate) fn pop_batch(
        &self,
        max: usize,
        max_bytes: usize,
        into: &mut Vec<T>,
        timeout: Option<Duration>,
    ) -> bool {
        self.pop_batch_lingering(max, max_bytes, into, timeout, Duration::ZERO)
    }

    /// [`pop_batch`](Self::pop_batch), but once there is an item, waits up to `linger` more for a
    /// full batch (`max` items or `max_bytes`), so that a trickle of lines is taken as one batch
    /// rather than one wake-up and one commit per line.
    pub(crate) fn pop_batch_lingering(
        &self,
        max: usize,
        max_bytes: usize,
        into: &mut Vec<T>,
        timeout: Option<Duration>,
        linger: Duration,
    ) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.consumer = Consumer::WaitsForAny;
        while state.items.is_empty() && !state.closed {
            state = match deadline {
                None => self
                    .not_empty
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        state.consumer = Consumer::Busy;
                        return true;
                    }
                    self.not_empty
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        if state.items.is_empty() {
            state.consumer = Consumer::Busy;
            return false;
        }
        if !linger.is_zero() {
            let until = Instant::now() + linger;
            state.consumer = Consumer::WaitsForBatch {
                items: max,
                bytes: max_bytes,
            };
            while !state.consumer_wants_wake() && !state.closed && state.producers_waiting == 0 {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = self
                    .not_empty
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        state.consumer = Consumer::Busy;
        // When everything queued fits in the batch, the whole queue is taken at once and moved
        // into `into` after the lock is released: a producer never waits for a thousand moves
        // (on a shared CPU the recorder, which yields, could be preempted holding the lock).
        let everything = into.len() + state.items.len() <= max && state.bytes <= max_bytes;
        let mut all = VecDeque::new();
        if everything {
            all = std::mem::take(&mut state.items);
            state.bytes = 0;
        } else {
            let mut taken = 0;
            while into.len() < max
                && taken < max_bytes
                && let Some(item) = state.items.pop_front()
            {
                taken += item.size();
                into.push(item);
            }
            state.bytes -= taken;
        }
        let producers_waiting = state.producers_waiting > 0;
        drop(state);
        if producers_waiting {
            self.not_full.notify_all();
        }
        into.extend(all);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    impl ByteSize for Vec<u8> {
        fn size(&self) -> usize {
            self.len()
        }
    }

    #[test]
    fn delivers_everything_in_order_under_a_tiny_budget() {
        let queue = Arc::new(ByteBoundedQueue::<Vec<u8>>::new(10));
        let producer = {
            let queue = queue.clone();
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    queue.push(i.to_le_bytes().to_vec());
                }
                queue.push(vec![7; 100]); // larger than the budget: still accepted
                queue.close();
            })
        };
        let mut got = Vec::new();
        loop {
            let mut batch = Vec::new();
            if !queue.pop_batch(64, usize::MAX, &mut batch, None) {
                break;
            }
            got.extend(batch);
        }
        producer.join().unwrap();
        assert_eq!(got.len(), 1001);
        for (i, item) in got.iter().take(1000).enumerate() {
            assert_eq!(item, &(i as u32).to_le_bytes().to_vec());
        }
        assert_eq!(got[1000].len(), 100);
    }
}
