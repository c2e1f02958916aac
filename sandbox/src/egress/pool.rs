//! A small pool of reusable threads for the broker: a new connection reuses an idle thread
//! instead of paying for a thread spawn on the connect path. Idle threads exit after a while.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle thread waits for work before it exits.
const IDLE: Duration = Duration::from_secs(30);

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    idle: usize,
}

/// Runs jobs on reused threads, spawning only when none is idle.
#[derive(Clone, Default)]
pub(crate) struct Pool {
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl Pool {
    /// The pool of the calling thread's network namespace and root directory, shared by every
    /// broker started from a thread with the same two, so that threads are reused across
    /// sandbox runs and none linger per broker.
    ///
    /// A pool thread connects from its own network namespace and resolves names with the
    /// files (`/etc/hosts`, `/etc/resolv.conf`) its own root and mount namespace show, and a
    /// thread's are its own: a thread started for another (an agent that has since isolated
    /// itself, or another of its threads) would connect, or resolve, as that one would. So
    /// each pair has a pool of its own, whose threads are started from the broker's; where
    /// either cannot be told, the broker gets a pool no other shares.
    pub(crate) fn of_this_thread() -> Pool {
        type Where = (u64, (u64, u64, u64));
        static POOLS: Mutex<Option<std::collections::HashMap<Where, Pool>>> = Mutex::new(None);
        let network = crate::netns::namespace_inode(c"/proc/thread-self/ns/net", None);
        let (Ok(network), Some(root)) = (network, crate::mounts::thread_root()) else {
            return Pool::default();
        };
        let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
        pools
            .get_or_insert_with(Default::default)
            .entry((network, root))
            .or_default()
            .clone()
    }

    /// Runs `job` on an idle thread, or on a new one named `name`.
    pub(crate) fn run(&self, name: &str, job: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let (lock, cv) = &*self.inner;
        let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
        if state.idle > state.jobs.len() {
            state.jobs.push_back(Box::new(job));
            cv.notify_one();
            return Ok(());
        }
        drop(state);
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                job();
                worker(&inner);
            })
            .map(|_| ())
    }
}

fn worker(inner: &(Mutex<State>, Condvar)) {
    let (lock, cv) = inner;
    let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(job) = state.jobs.pop_front() {
            drop(state);
            job();
            state = lock.lock().unwrap_or_else(|p| p.into_inner());
            continue;
        }
        state.idle += 1;
        let (next, timeout) = cv
            .wait_timeout(state, IDLE)
            .unwrap_or_else(|p| p.into_inner());
        state = next;
        state.idle -= 1;
        if timeout.timed_out() && state.jobs.is_empty() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn reuses_idle_threads() {
        let pool = Pool::default();
        let (tx, rx) = mpsc::channel();
        let first = {
            let tx = tx.clone();
            pool.run("t", move || tx.send(std::thread::current().id()).unwrap())
                .unwrap();
            rx.recv().unwrap()
        };
        // Let the thread go idle before the next job.
        std::thread::sleep(Duration::from_millis(50));
        pool.run("t", move || tx.send(std::thread::current().id()).unwrap())
            .unwrap();
        assert_eq!(rx.recv().unwrap(), first, "the idle thread took the job");
    }
}
