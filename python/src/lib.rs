//! `twinboost._core`: the native module under the `twinboost` Python package, a thin PyO3 layer
//! over `boost`. The Python package (`pysrc/twinboost`) turns NumPy, SciPy and pandas inputs into
//! the arrays these functions take, and holds XGBoost's Python API (`train`, callbacks, the
//! scikit-learn estimators); everything that decides a model stays in `boost`.
//!
//! - `dmatrix.rs`: `DMatrix` from dense or CSR arrays, with labels, weights, groups, margins;
//! - `batches.rs`: `DMatrix.from_batches`, a Python `DataIter`'s batches read into pages;
//! - `cuda.rs`: device arrays (the CUDA array interface) borrowed in place, `DeviceArray` results;
//! - `booster.rs`: `Booster`: predict, evaluate, save and load XGBoost's JSON, attributes;
//! - `train.rs`: `train`, with the GIL released and the Python callbacks called each round;
//! - `errors.rs`: `boost::Error` to the package's exception classes;
//! - `pools.rs`: the thread pools of `nthread`, one a count, kept.

use pyo3::prelude::*;

mod batches;
mod booster;
mod cuda;
mod dmatrix;
mod errors;
mod pools;
mod train;

/// The module `twinboost._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dmatrix::DMatrix>()?;
    m.add_class::<booster::Booster>()?;
    m.add_class::<train::ModelView>()?;
    m.add_class::<cuda::DeviceArray>()?;
    m.add_function(wrap_pyfunction!(train::train, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("OBJECTIVE_NAMES", boost::OBJECTIVE_NAMES.to_vec())?;
    m.add("METRIC_NAMES", boost::METRIC_NAMES.to_vec())?;
    Ok(())
}
