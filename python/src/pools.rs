//! The thread pools of `nthread`: one a thread count, made on first use and kept, so that a
//! prediction of one row does not pay for starting threads (XGBoost sizes its OpenMP team the
//! same way, per call, without new threads).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::{PyErr, Python};
use rayon::ThreadPool;

/// Runs `work` on `nthread` threads (0: rayon's global pool, every core).
pub(crate) fn install<T: Send>(nthread: usize, work: impl FnOnce() -> T + Send) -> Result<T, String> {
    if nthread == 0 {
        return Ok(work());
    }
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let pool = {
        let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        match pools.get(&nthread) {
            Some(pool) => pool.clone(),
            None => {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(nthread).build().map_err(|e| e.to_string())?;
                pools.entry(nthread).or_insert(Arc::new(pool)).clone()
            }
        }
    };
    Ok(pool.install(work))
}

/// The error of a pool of `nthread` threads that could not be made.
pub(crate) fn refused(py: Python<'_>, nthread: usize, reason: String) -> PyErr {
    let reason = format!("no pool of {nthread} threads: {reason}");
    crate::errors::to_py(py, boost::Error::InvalidParameter { name: "nthread".into(), reason })
}
