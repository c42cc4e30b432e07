//! The only file that touches PyO3: converts arguments, calls the core, maps errors.
use pyo3::prelude::*;

#[pymodule(gil_used = false)]
mod _sessiontree {
    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
