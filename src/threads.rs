//! `n_jobs` → a rayon pool of that many threads (cached, so repeated calls do not respawn
//! threads): the core's one reading of a thread count, for the Python bindings and any
//! Rust caller alike. `None` is one thread, scikit-learn's convention: a caller that runs fits in
//! parallel itself (`GridSearchCV(n_jobs=...)`, joblib, Dask) must not get a pool of all
//! cores per fit. Negative values follow joblib: -1 is all cores, -2 all but one, ... At most `max(256, 4 × cores)` threads:
//! every pool is a set of OS threads kept for the process's life, and a count far
//! beyond the cores (n_jobs = 10**6) would only start threads until memory runs out.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::ThreadPool;

use crate::{Error, Result};

/// The pools started so far, by their number of threads.
static POOLS: Mutex<BTreeMap<usize, Arc<ThreadPool>>> = Mutex::new(BTreeMap::new());

/// The cores this process may use, asked once: on Linux the answer reads cgroup
/// files, which costs more than a small projection batch.
fn cores() -> i64 {
    static CORES: OnceLock<i64> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1) as i64)
}

/// The threads of `n_jobs` (joblib's convention, see the module doc), refused naming
/// `n_jobs` when zero or beyond the cap.
pub fn resolve(n_jobs: Option<i64>) -> Result<Option<usize>> {
    let n = n_jobs.unwrap_or(1);
    let cores = cores();
    let threads = if n < 0 { (cores + 1 + n).max(1) } else { n };
    if threads < 1 {
        return Err(Error::param(
            "n_jobs",
            "must be a positive integer, a negative joblib-style count, or None; got 0",
        ));
    }
    let most = (4 * cores).max(256);
    if threads > most {
        return Err(Error::param(
            "n_jobs",
            format!("must be at most {most} threads (4 per core, at least 256), got {n}"),
        ));
    }
    Ok(Some(threads as usize))
}

/// Runs `f` on a pool of `threads` threads (on the calling thread, and so in rayon's
/// global pool, when `None`).
pub fn install<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    let Some(n) = threads else { return f() };
    // The lock is released at the end of this statement, before the work runs.
    let pool = Arc::clone(POOLS.lock().unwrap_or_else(|e| e.into_inner()).entry(n).or_insert_with(|| {
        let builder = rayon::ThreadPoolBuilder::new().num_threads(n).thread_name(|i| format!("toprank-{i}"));
        Arc::new(builder.build().expect("failed to start a rayon thread pool"))
    }));
    pool.install(f)
}
