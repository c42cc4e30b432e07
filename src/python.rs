//! The only file that touches PyO3: converts arguments, calls the core, maps errors.
//!
//! `Index` is frozen; its state sits behind an `RwLock` so queries take `&self` and
//! growth (`append_line`, `refresh`) swaps in place. A thread never waits for the lock
//! while attached to the interpreter (it detaches to wait), so a refresh that runs
//! detached cannot deadlock against a reader that holds the GIL.
use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use pyo3::exceptions::{PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::error::Error;
use crate::index::{Index, Value};
use crate::kind::EntryKind;
use crate::persist::Cache;
use crate::usage::Total;

pyo3::import_exception!(sessiontree.errors, InvalidSessionError);
pyo3::import_exception!(sessiontree.errors, StaleSessionError);
pyo3::import_exception!(sessiontree.errors, SessionError);

/// `path` is named in the error as Python names it (`os.fsdecode` of its bytes).
fn to_py_err(e: Error, path: Option<&Path>) -> PyErr {
    let name = || path.map(|p| p.as_os_str().to_os_string());
    match e {
        Error::Io(io) => match io.raw_os_error() {
            // OSError(errno, strerror, filename) picks the subclass (FileNotFoundError, ...).
            Some(code) => {
                let msg = std::io::Error::from_raw_os_error(code).to_string();
                let msg = msg.split(" (os error").next().unwrap_or(&msg).to_string();
                PyOSError::new_err((code, msg, name()))
            }
            None => PyErr::from(io),
        },
        // The reason is a code (`HeaderProblem::code`); `_load.header_error_from_code`
        // words it, as the python backend does.
        Error::InvalidSession {
            problem,
            line,
            offset,
        } => InvalidSessionError::new_err((problem.code(), name(), line, offset)),
        Error::Stale(why) => StaleSessionError::new_err(match path {
            Some(p) => format!("{}: {why}", p.to_string_lossy()),
            None => why,
        }),
        Error::Closed => SessionError::new_err("the session index is closed"),
    }
}

/// An id (or other decoded JSON string) as Python `str`: bytes are UTF-8 except lone
/// surrogates (3-byte form).
fn id_to_py<'py>(py: Python<'py>, id: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match std::str::from_utf8(id) {
        Ok(s) => Ok(PyString::new(py, s).into_any()),
        Err(_) => PyBytes::new(py, id).call_method1("decode", ("utf-8", "surrogatepass")),
    }
}

/// A Python id (or other `str`) as the index's bytes (borrowed from the `str`'s UTF-8
/// form unless it holds lone surrogates); `None` for anything that is not a `str`.
fn id_from_py<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Option<Cow<'a, [u8]>>> {
    let Ok(s) = obj.cast::<PyString>() else {
        return Ok(None);
    };
    match s.to_str() {
        Ok(t) => Ok(Some(Cow::Borrowed(t.as_bytes()))),
        Err(_) => {
            let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(Some(Cow::Owned(b.cast::<PyBytes>()?.as_bytes().to_vec())))
        }
    }
}

/// A file name or path read from the file system, given to Python as `os.fsdecode`
/// gives it: the file system's encoding, undecodable bytes as lone surrogates. PyO3's
/// `OsString` conversion takes any valid UTF-8 as UTF-8 whatever that encoding is, so
/// under a C locale without UTF-8 mode a name such as `é.jsonl` came back as a `str`
/// Python could not encode to open it (adversary round 55).
struct FsName(Vec<u8>);

impl<'py> IntoPyObject<'py> for FsName {
    type Target = PyString;
    type Output = Bound<'py, PyString>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        let len = pyo3::ffi::Py_ssize_t::try_from(self.0.len())
            .map_err(|_| PyValueError::new_err("a name too long"))?;
        // SAFETY: a valid pointer and length for the call, with the thread attached; the
        // call returns a new reference to a `str`, or NULL with an exception set.
        unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                pyo3::ffi::PyUnicode_DecodeFSDefaultAndSize(self.0.as_ptr().cast(), len),
            )
            .map(|o| o.cast_into_unchecked())
        }
    }
}

/// A path as the OS bytes (`os.fsencode`: `str` with surrogate escapes, `bytes`, or a
/// path-like), never a lossy conversion: Linux file names need not be UTF-8.
fn os_path(path: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let b = path.py().import("os")?.call_method1("fsencode", (path,))?;
    let bytes = b.cast::<PyBytes>()?.as_bytes().to_vec();
    Ok(PathBuf::from(OsString::from_vec(bytes)))
}

/// The persisted indexes' folder and rules as `_caches.index_cache()` gives them:
/// `(folder, budget in bytes, smallest file kept in bytes, settle in seconds)`.
fn cache_of(
    (dir, budget, min_bytes, settle): (Bound<'_, PyAny>, u64, u64, f64),
) -> PyResult<Cache> {
    Ok(Cache {
        dir: os_path(&dir)?,
        budget,
        min_bytes,
        settle: std::time::Duration::try_from_secs_f64(settle)
            .map_err(|e| PyValueError::new_err(format!("settle: {e}")))?,
    })
}

/// A column as `bytes`, each item by `f` (native byte order), in one allocation.
fn packed<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    v: &[T],
    f: impl Fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    PyBytes::new(py, &out)
}

/// A usage sum as Python's `int` or `float`.
fn total_to_py(py: Python<'_>, t: Total) -> PyResult<Bound<'_, PyAny>> {
    Ok(match t {
        Total::Int(i) => i.into_pyobject(py)?.into_any(),
        Total::Float(x) => x.into_pyobject(py)?.into_any(),
    })
}

/// The index of one session image (entries numbered 0.. in file order).
#[pyclass(frozen, name = "Index", module = "sessiontree._sessiontree")]
pub struct PyIndex {
    inner: RwLock<Index>,
    path: Option<PathBuf>,
}

impl PyIndex {
    fn read(&self, py: Python<'_>) -> RwLockReadGuard<'_, Index> {
        loop {
            match self.inner.try_read() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| {
                    drop(self.inner.read());
                }),
            }
        }
    }

    fn write(&self, py: Python<'_>) -> RwLockWriteGuard<'_, Index> {
        loop {
            match self.inner.try_write() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| {
                    drop(self.inner.write());
                }),
            }
        }
    }

    /// The lines of `es` as a list of `bytes` (adjacent lines read in one `pread`).
    fn lines_of<'py>(
        &self,
        py: Python<'py>,
        ix: &Index,
        es: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        let mut out = Vec::with_capacity(es.len());
        ix.for_each_line(es, |b| out.push(PyBytes::new(py, b)))
            .map_err(|e| self.err(e))?;
        PyList::new(py, out)
    }

    /// [`gather`] over the entry numbers `nums_of` gives for entry `n` (checked).
    fn gather_of<'py>(
        &self,
        py: Python<'py>,
        n: i64,
        items: &Bound<'py, PyList>,
        nums_of: fn(&Index, u32) -> Vec<u32>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let nums = self.reading(py, |ix| Self::entry(ix, n).map(|e| nums_of(ix, e)))?;
        gather(items, &nums)
    }

    fn err(&self, e: Error) -> PyErr {
        to_py_err(e, self.path.as_deref())
    }

    /// `f`'s answer (or error) from the index, unless a read of a kept index it views in
    /// place met a cut (CONTRACT §6, "Bounded"): such a read gives zeros (`guard.rs`),
    /// so the answer may be wrong (NUL ids, entries not found, a line "changed"), and
    /// `StaleSessionError` naming the kept index takes its place. One atomic load (the
    /// guard's flag), after every read: the manager's check before each call (the file's
    /// size, `check_persisted`) cannot see a cut that the call itself is the first to
    /// meet. An `fstat` here too (a cut within the page the call reads last, which reads
    /// as zeros without a fault) cost 0.25 µs per call of the core, 0.75 µs of a 1.6 µs
    /// `parent_of` (docs/BENCHMARKS.md, "Reopening").
    fn reading<R>(&self, py: Python<'_>, f: impl FnOnce(&Index) -> PyResult<R>) -> PyResult<R> {
        let ix = self.read(py);
        let out = f(&ix);
        ix.check_persisted_reads().map_err(|e| self.err(e))?;
        out
    }

    /// A checked entry number.
    fn entry(ix: &Index, n: i64) -> PyResult<u32> {
        if n < 0 || n as usize >= ix.len() {
            return Err(PyIndexError::new_err(format!(
                "entry number {n} out of range"
            )));
        }
        Ok(n as u32)
    }
}

/// `items[k]` for each `k` of `nums` when every one is set, else `None`: the adapter's
/// decoded entries (a list indexed by entry number, `None` = not decoded) picked in one
/// call, where building the numbers as Python ints and testing the picks for `None`
/// took longer than the python backend's walk (`_native.NativeIndex.path`).
fn gather<'py>(items: &Bound<'py, PyList>, nums: &[u32]) -> PyResult<Option<Bound<'py, PyList>>> {
    let mut out = Vec::with_capacity(nums.len());
    for &k in nums {
        match items.get_item(k as usize) {
            Ok(item) if !item.is_none() => out.push(item),
            _ => return Ok(None),
        }
    }
    PyList::new(items.py(), out).map(Some)
}

/// `context_plan`'s result: (messages, compaction, thinking, model, entries, edits,
/// active tools).
type PlanTuple = (
    Vec<u32>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Vec<u32>,
    Vec<(u32, u32)>,
    Option<u64>,
);

fn opt(n: Option<u32>) -> Option<u64> {
    n.map(u64::from)
}

#[pymethods]
impl PyIndex {
    /// Index the session file at `path` (releases the GIL); with `cache` (`(folder,
    /// budget bytes, min file bytes, settle seconds)`), through the persisted indexes
    /// kept in that folder (`persist`).
    #[staticmethod]
    #[pyo3(signature = (path, cache=None))]
    fn open(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        cache: Option<(Bound<'_, PyAny>, u64, u64, f64)>,
    ) -> PyResult<PyIndex> {
        let p = os_path(path)?;
        let pb = p.clone();
        let cache = cache.map(cache_of).transpose()?;
        let ix = py
            .detach(move || match &cache {
                None => Index::open(&pb),
                Some(c) => Index::open_cached(&pb, c),
            })
            .map_err(|e| to_py_err(e, Some(&p)))?;
        Ok(PyIndex {
            inner: RwLock::new(ix),
            path: Some(p),
        })
    }

    /// `Index.open(path, cache)` when `cache` keeps an index of the file that is
    /// still its own (the bytes the file gained since scanned), else `None`: the file
    /// is not scanned (`persist::Index::open_kept`).
    #[staticmethod]
    fn open_kept(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        cache: (Bound<'_, PyAny>, u64, u64, f64),
    ) -> PyResult<Option<PyIndex>> {
        let p = os_path(path)?;
        let pb = p.clone();
        let cache = cache_of(cache)?;
        let ix = py
            .detach(move || Index::open_kept(&pb, &cache))
            .map_err(|e| to_py_err(e, Some(&p)))?;
        Ok(ix.map(|ix| PyIndex {
            inner: RwLock::new(ix),
            path: Some(p),
        }))
    }

    /// Index an in-memory image (releases the GIL).
    #[staticmethod]
    fn from_image(py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<PyIndex> {
        let bytes = data.as_bytes().to_vec();
        let ix = py
            .detach(move || Index::from_image(bytes))
            .map_err(|e| to_py_err(e, None))?;
        Ok(PyIndex {
            inner: RwLock::new(ix),
            path: None,
        })
    }

    /// The header's version is absent or < 3: only the header was indexed.
    #[getter]
    fn needs_migration(&self, py: Python<'_>) -> PyResult<bool> {
        self.reading(py, |ix| Ok(ix.needs_migration()))
    }

    /// The header line's bytes.
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.reading(py, |ix| {
            let h = ix.header().map_err(|e| self.err(e))?;
            Ok(PyBytes::new(py, &h))
        })
    }

    /// oh-my-pi's title slot line before the header, as the file holds it now.
    fn title_slot<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.reading(py, |ix| {
            let t = ix.title_slot().map_err(|e| self.err(e))?;
            Ok(t.map(|b| PyBytes::new(py, &b)))
        })
    }

    /// `load_report` items: (kind, line, offset, ids, n, text), by line then rule.
    fn issues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.reading(py, |ix| {
            let items = ix
                .issues()
                .into_iter()
                .map(|i| -> PyResult<Bound<'py, PyTuple>> {
                    let ids = i
                        .ids
                        .iter()
                        .map(|id| id_to_py(py, id))
                        .collect::<PyResult<Vec<_>>>()?;
                    let text = i.text.as_deref().map(|t| id_to_py(py, t)).transpose()?;
                    (
                        i.kind.as_str(),
                        i.line,
                        i.offset,
                        PyTuple::new(py, ids)?,
                        i.n,
                        text,
                    )
                        .into_pyobject(py)
                })
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)
        })
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.reading(py, |ix| Ok(ix.len()))
    }

    /// Ids of entries `ns` (all entries in file order when `None`).
    #[pyo3(signature = (ns=None))]
    fn ids<'py>(&self, py: Python<'py>, ns: Option<Vec<i64>>) -> PyResult<Bound<'py, PyList>> {
        self.reading(py, |ix| {
            let v = match ns {
                None => (0..ix.len() as u32)
                    .map(|e| id_to_py(py, ix.id(e)))
                    .collect::<PyResult<Vec<_>>>()?,
                Some(ns) => ns
                    .into_iter()
                    .map(|n| id_to_py(py, ix.id(Self::entry(ix, n)?)))
                    .collect::<PyResult<Vec<_>>>()?,
            };
            PyList::new(py, v)
        })
    }

    /// The id of entry `n`.
    fn id<'py>(&self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyAny>> {
        self.reading(py, |ix| {
            let e = Self::entry(ix, n)?;
            id_to_py(py, ix.id(e))
        })
    }

    /// Entry number of `entry_id`, or `None` (also for a non-`str`).
    fn find(&self, py: Python<'_>, entry_id: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        let Some(id) = id_from_py(entry_id)? else {
            return Ok(None);
        };
        self.reading(py, |ix| Ok(ix.find(&id)))
    }

    /// The line of entry `n` (no CR/LF) as a copy (`pread` straight into the `bytes`).
    fn line<'py>(&self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyBytes>> {
        self.reading(py, |ix| {
            let e = Self::entry(ix, n)?;
            PyBytes::new_with(py, ix.line_len(e), |buf| {
                ix.read_line(e, buf).map_err(|e| self.err(e))
            })
        })
    }

    /// Lines of entries `ns` (all entries when `None`), one copy each.
    #[pyo3(signature = (ns=None))]
    fn lines<'py>(&self, py: Python<'py>, ns: Option<Vec<i64>>) -> PyResult<Bound<'py, PyList>> {
        self.reading(py, |ix| {
            let es = match ns {
                None => (0..ix.len() as u32).collect::<Vec<_>>(),
                Some(ns) => ns
                    .into_iter()
                    .map(|n| Self::entry(ix, n))
                    .collect::<PyResult<Vec<_>>>()?,
            };
            self.lines_of(py, ix, &es)
        })
    }

    /// The lines of entries `ns` as `lines` reads them (checked against the index),
    /// each with its string values cut to `keep` characters (`clip::clip_strings`).
    fn lines_clipped<'py>(
        &self,
        py: Python<'py>,
        ns: Vec<i64>,
        keep: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        self.reading(py, |ix| {
            let es = ns
                .into_iter()
                .map(|n| Self::entry(ix, n))
                .collect::<PyResult<Vec<_>>>()?;
            let mut out = Vec::with_capacity(es.len());
            let mut buf = Vec::new();
            ix.for_each_line(&es, |b| {
                crate::clip_strings(b, keep, &mut buf);
                out.push(PyBytes::new(py, &buf));
            })
            .map_err(|e| self.err(e))?;
            PyList::new(py, out)
        })
    }

    /// The last accepted entry, or `None`.
    fn last(&self, py: Python<'_>) -> PyResult<Option<u32>> {
        self.reading(py, |ix| Ok(ix.last()))
    }

    /// The leaf on open (rule 13), or `None` (before the first entry).
    fn file_leaf(&self, py: Python<'_>) -> PyResult<Option<u32>> {
        self.reading(py, |ix| Ok(ix.file_leaf()))
    }

    /// `(st_dev, st_ino)` of the file the index reads; `None` for an image in memory.
    fn file_id(&self, py: Python<'_>) -> PyResult<Option<(u64, u64)>> {
        self.reading(py, |ix| ix.file_id().map_err(|e| self.err(e)))
    }

    /// `(image length, first and last FINGERPRINT bytes of it)` as the open's scan
    /// read them; `None` for an image in memory or when the scan did not keep them.
    fn fingerprint<'py>(&self, py: Python<'py>) -> PyResult<Option<(u64, Bound<'py, PyBytes>)>> {
        self.reading(py, |ix| {
            Ok(ix.fingerprint().map(|(n, f)| (n, PyBytes::new(py, f))))
        })
    }

    /// The catalog's listing of the bytes this index covers, as `scan_listing` from
    /// offset 0 with no content would give it up to the end of the last line covered
    /// (`listing::scan_indexed`); `None` when the index cannot give it so.
    fn listing<'py>(
        &self,
        py: Python<'py>,
        fingerprint: u64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.reading(py, |ix| {
            match crate::listing::indexed::scan_indexed(ix, fingerprint).map_err(|e| self.err(e))? {
                Some(s) => scan_tuple(py, &s).map(Some),
                None => Ok(None),
            }
        })
    }

    /// Raise `StaleSessionError` if the persisted index this one reads in place was cut
    /// short or written over under it (by another program; the kept index is removed);
    /// `viewing` says whether it reads one.
    fn check_persisted(&self, py: Python<'_>) -> PyResult<bool> {
        let ix = self.read(py);
        ix.check_persisted().map_err(|e| self.err(e))?;
        Ok(ix.views_persisted())
    }

    /// Heap bytes each part of the index holds, as `[(part, bytes)]`.
    fn memory(&self, py: Python<'_>) -> Vec<(&'static str, usize)> {
        self.read(py).memory()
    }

    /// Bytes of the image consumed.
    fn image_len(&self, py: Python<'_>) -> PyResult<u64> {
        self.reading(py, |ix| Ok(ix.image_len()))
    }

    /// An invalid last piece without LF waits for the rest of its line.
    fn has_pending_tail(&self, py: Python<'_>) -> PyResult<bool> {
        self.reading(py, |ix| Ok(ix.has_pending_tail()))
    }

    /// Children of entry `n` in file order.
    fn children(&self, py: Python<'_>, n: i64) -> PyResult<Vec<u32>> {
        self.reading(py, |ix| Ok(ix.children(Self::entry(ix, n)?)))
    }

    /// Entry numbers from the root down to `n`.
    fn path(&self, py: Python<'_>, n: i64) -> PyResult<Vec<u32>> {
        self.reading(py, |ix| Ok(ix.path(Self::entry(ix, n)?)))
    }

    /// `items[k]` for each entry `k` from the root down to `n`, or `None` if one of them
    /// is `None` or past the end of `items` (see [`gather`]).
    fn path_in<'py>(
        &self,
        py: Python<'py>,
        n: i64,
        items: &Bound<'py, PyList>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.gather_of(py, n, items, Index::path)
    }

    /// `items[k]` for each child `k` of entry `n` in file order, or `None` (see
    /// [`gather`]).
    fn children_in<'py>(
        &self,
        py: Python<'py>,
        n: i64,
        items: &Bound<'py, PyList>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.gather_of(py, n, items, Index::children)
    }

    /// Ids from the root down to `n`.
    fn path_ids<'py>(&self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyList>> {
        self.reading(py, |ix| {
            let e = Self::entry(ix, n)?;
            let v = ix
                .path(e)
                .into_iter()
                .map(|x| id_to_py(py, ix.id(x)))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, v)
        })
    }

    /// `getTree` shape: (roots in file order, start, children) where the children of
    /// entry `e`, oldest first, are `children[start[e]:start[e + 1]]`.
    fn tree(&self, py: Python<'_>) -> PyResult<(Vec<u32>, Vec<u32>, Vec<u32>)> {
        self.reading(py, |ix| Ok(ix.tree()))
    }

    /// Entries whose `type` is `type_name` (one of `ENTRY_TYPES`) numbered `start` or
    /// later, in file order.
    #[pyo3(signature = (type_name, start=0))]
    fn entries_of_type(&self, py: Python<'_>, type_name: &str, start: i64) -> PyResult<Vec<u32>> {
        let k = EntryKind::from_name(type_name.as_bytes());
        if k.name().is_none() {
            return Err(PyValueError::new_err(format!(
                "not an entry type: {type_name}"
            )));
        }
        let from = u32::try_from(start.max(0)).unwrap_or(u32::MAX);
        self.reading(py, |ix| Ok(ix.entries_of_kind(k, from)))
    }

    /// Those of entries `ns` whose line has a number with 19 or more digits in a run not
    /// after `.` (`_jsonl.decode_line` looks for such runs only in these), in order.
    fn long_numbers(&self, py: Python<'_>, ns: Vec<i64>) -> PyResult<Vec<u32>> {
        self.reading(py, |ix| {
            let es = ns
                .iter()
                .map(|&n| Self::entry(ix, n))
                .collect::<PyResult<Vec<u32>>>()?;
            Ok(ix.long_numbers(&es))
        })
    }

    /// The label entries numbered `start` or later, in file order, as `(entry,
    /// targetId, label, timestamp)`: a string value as `str`, another as its JSON text
    /// (`bytes`), `None` for an absent key. Raises `StaleSessionError` for a line
    /// changed in the file.
    #[pyo3(signature = (start=0))]
    fn label_fields<'py>(&self, py: Python<'py>, start: i64) -> PyResult<Bound<'py, PyList>> {
        let from = u32::try_from(start.max(0)).unwrap_or(u32::MAX);
        let got = self.reading(py, |ix| ix.label_fields(from).map_err(|e| self.err(e)))?;
        let value = |v: &Option<Value>| -> PyResult<Option<Bound<'py, PyAny>>> {
            Ok(match v {
                None => None,
                Some(Value::Str(s)) => Some(id_to_py(py, s)?),
                Some(Value::Json(t)) => Some(PyBytes::new(py, t).into_any()),
            })
        };
        let rows = got
            .iter()
            .map(|(e, [t, l, ts])| (*e, value(t)?, value(l)?, value(ts)?).into_pyobject(py))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
    }

    /// The tree's shape as packed columns in native byte order, one item per entry in
    /// file order unless said: `(parents` i32, -1 for a root; `kinds` u8, the index in
    /// `ENTRY_TYPES` (`len(ENTRY_TYPES)`: another type); `roles` u8, 0 none, `1 + ` the
    /// index in `ROLES`, `len(ROLES) + 1` another string; `timestamps` i64 ms,
    /// `-2**63` none; `roots` u32 in file order; `start` u32, n + 1 items; `children`
    /// u32, oldest first (`getTree` order)`)` and the other role strings as
    /// `[(entry, role)]`.
    #[allow(clippy::type_complexity)]
    fn shape<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyList>,
    )> {
        self.reading(py, |ix| {
            let (roots, start, kids) = ix.tree();
            let kinds: Vec<u8> = ix.kinds().iter().map(|&k| k as u8).collect();
            let roles: Vec<u8> = ix.roles().iter().map(|&r| r as u8).collect();
            let others = ix
                .other_roles()
                .map_err(|e| self.err(e))?
                .into_iter()
                .map(|(e, r)| -> PyResult<Bound<'py, PyTuple>> {
                    (e, id_to_py(py, &r)?).into_pyobject(py)
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok((
                packed(py, ix.parents(), |p| p.to_ne_bytes()),
                PyBytes::new(py, &kinds),
                PyBytes::new(py, &roles),
                packed(py, ix.timestamps(), |t| t.to_ne_bytes()),
                packed(py, &roots, |x| x.to_ne_bytes()),
                packed(py, &start, |x| x.to_ne_bytes()),
                packed(py, &kids, |x| x.to_ne_bytes()),
                PyList::new(py, others)?,
            ))
        })
    }

    /// The parent of entry `n`, `None` for a root.
    fn parent(&self, py: Python<'_>, n: i64) -> PyResult<Option<u32>> {
        self.reading(py, |ix| Ok(ix.parent_of(Self::entry(ix, n)?)))
    }

    /// The `type` of entry `n` when it is one of `ENTRY_TYPES`, else `None`.
    fn kind(&self, py: Python<'_>, n: i64) -> PyResult<Option<&'static str>> {
        self.reading(py, |ix| {
            Ok(ix.kind_of(Self::entry(ix, n)?).and_then(EntryKind::name))
        })
    }

    /// Entries without children, in file order.
    fn leaves(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        self.reading(py, |ix| Ok(ix.leaves()))
    }

    /// Entries whose id starts with `prefix`: the first `limit` in file order and how
    /// many there are (`([], 0)` for a non-`str`).
    fn with_prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        limit: usize,
    ) -> PyResult<(Vec<u32>, usize)> {
        let Some(p) = id_from_py(prefix)? else {
            return Ok((Vec::new(), 0));
        };
        self.reading(py, |ix| Ok(ix.with_prefix(&p, limit)))
    }

    /// Token and cost totals of the assistant messages, reading only their lines:
    /// `((input, output, cacheRead, cacheWrite, totalTokens), cost, [(provider JSON,
    /// model JSON, count)], messages)` (`None` for an absent key), or `None` when a
    /// number cannot be summed exactly here.
    #[allow(clippy::type_complexity)]
    fn usage_totals<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<
        Option<(
            Bound<'py, PyTuple>,
            Bound<'py, PyAny>,
            Bound<'py, PyList>,
            u64,
        )>,
    > {
        self.reading(py, |ix| {
            let Some(t) = ix.usage_totals() else {
                return Ok(None);
            };
            let tokens = t
                .tokens
                .iter()
                .map(|&x| total_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            let models = t
                .models
                .iter()
                .map(|((p, m), n)| -> PyResult<Bound<'py, PyTuple>> {
                    let text = |b: &Option<Vec<u8>>| b.as_deref().map(|b| PyBytes::new(py, b));
                    (text(p), text(m), *n).into_pyobject(py)
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok(Some((
                PyTuple::new(py, tokens)?,
                total_to_py(py, t.cost)?,
                PyList::new(py, models)?,
                t.messages,
            )))
        })
    }

    /// The context plan at `leaf` (`None`: empty): (messages, compaction, thinking,
    /// model, entries, edits, active tools) as entry numbers.
    fn context_plan(&self, py: Python<'_>, leaf: Option<i64>) -> PyResult<PlanTuple> {
        self.reading(py, |ix| {
            let leaf = leaf.map(|n| Self::entry(ix, n)).transpose()?;
            let p = ix.plan(leaf);
            Ok((
                p.messages,
                opt(p.compaction),
                opt(p.thinking),
                opt(p.model),
                p.entries,
                p.edits,
                opt(p.active_tools),
            ))
        })
    }

    /// Index one line appended to the image; returns its entry number, or `None` if
    /// it was not accepted (then reported in `issues`).
    fn append_line(&self, py: Python<'_>, line: &Bound<'_, PyBytes>) -> PyResult<Option<u32>> {
        let bytes = line.as_bytes();
        if bytes.contains(&b'\n') {
            return Err(PyValueError::new_err(
                "an appended line must not contain LF",
            ));
        }
        let mut ix = self.write(py);
        let out = ix.append_line(bytes);
        ix.check_persisted_reads().and(out).map_err(|e| self.err(e))
    }

    /// Index complete lines appended to the file since `image_len()`, read from the
    /// file descriptor the index holds; returns how many entries were added (releases
    /// the GIL).
    fn refresh(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| {
            let mut ix = self.inner.write().unwrap_or_else(|e| e.into_inner());
            let out = ix.refresh();
            ix.check_persisted_reads().and(out)
        })
        .map_err(|e| self.err(e))
    }

    /// Hold the file at `path` for later refreshes (an image from `from_image` that has
    /// been written there); a no-op for an index that holds a file already.
    fn attach(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let p = os_path(path)?;
        let mut ix = self.write(py);
        ix.attach(&p).map_err(|e| to_py_err(e, Some(&p)))
    }

    /// Release the map; later reads raise `SessionError`.
    fn close(&self, py: Python<'_>) {
        self.write(py).close();
    }

    /// The entries table's index columns (`Index::columns`) as `bytes` in Arrow
    /// layouts, by name; `leaf` (`None`: no path) marks the current path.
    fn table_columns<'py>(
        &self,
        py: Python<'py>,
        leaf: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.reading(py, |ix| {
            let leaf = leaf.map(|n| Self::entry(ix, n)).transpose()?;
            let c = ix.columns(leaf).map_err(|e| self.err(e))?;
            let d = PyDict::new(py);
            for (name, buf) in [
                ("id_offsets", &c.id_offsets),
                ("id_data", &c.id_data),
                ("line", &c.line),
                ("offset", &c.offset),
                ("length", &c.length),
                ("parent", &c.parent),
                ("parent_valid", &c.parent_valid),
                ("depth", &c.depth),
                ("on_path", &c.on_path),
                ("timestamp", &c.timestamp),
                ("timestamp_valid", &c.timestamp_valid),
            ] {
                d.set_item(name, PyBytes::new(py, buf))?;
            }
            Ok(d)
        })
    }

    /// The decoded columns of entries `start..stop` (`Index::rows`, read and decoded
    /// with the GIL released) as `bytes` in Arrow layouts, by name: per column of
    /// `rows::STRING_COLUMNS` `NAME.offsets` (i32, or i64 past 2 GiB), `NAME.data`, `NAME.valid`; per
    /// column of `rows::INT_COLUMNS`, `cost` (f64) and `is_error` (bitmap)
    /// `NAME.values`, `NAME.valid`; `images.offsets` (i32, per entry) and
    /// `image_data.*`, `image_mime.*` (per image); `call.entry` (i32, entry number from
    /// `start`), `call_id.*`, `tool_name.*`, `arguments.*`, `arguments_bytes.*`;
    /// `result.entry`, `result_call.*`, `result_text.*`, `result_text_bytes.*`,
    /// `result_is_error.*`. Bitmaps are LSB first, 1 = valid/true.
    fn table_rows<'py>(
        &self,
        py: Python<'py>,
        start: i64,
        stop: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (a, b) = (start.max(0) as u32, stop.max(0) as u32);
        let rows = py
            .detach(|| {
                let ix = self.inner.read().unwrap_or_else(|e| e.into_inner());
                let out = ix.rows(a, b);
                ix.check_persisted_reads().and(out)
            })
            .map_err(|e| self.err(e))?;
        let d = PyDict::new(py);
        let put = |name: &str, buf: &[u8]| d.set_item(name, PyBytes::new(py, buf));
        let bits = |v: &[bool]| {
            let mut out = vec![0u8; v.len().div_ceil(8)];
            for (i, _) in v.iter().enumerate().filter(|(_, &b)| b) {
                out[i / 8] |= 1 << (i % 8);
            }
            out
        };
        let le = |v: &mut dyn Iterator<Item = [u8; 8]>| v.flatten().collect::<Vec<u8>>();
        let strs = |name: &str, c: &crate::rows::Strs| -> PyResult<()> {
            let offsets: &[i64] = if c.offsets.is_empty() {
                &[0]
            } else {
                &c.offsets
            };
            // i32 (Arrow's `string`) unless the values pass 2 GiB (then i64: `large_string`).
            let wide = offsets.last().is_some_and(|&o| o > i64::from(i32::MAX));
            let offsets: Vec<u8> = if wide {
                le(&mut offsets.iter().map(|o| o.to_le_bytes()))
            } else {
                offsets
                    .iter()
                    .flat_map(|&o| (o as i32).to_le_bytes())
                    .collect()
            };
            put(&format!("{name}.offsets"), &offsets)?;
            put(&format!("{name}.data"), &c.data)?;
            put(&format!("{name}.valid"), &bits(&c.valid))
        };
        let ints = |name: &str, c: &crate::rows::Opt<i64>| -> PyResult<()> {
            put(
                &format!("{name}.values"),
                &le(&mut c.values.iter().map(|o| o.to_le_bytes())),
            )?;
            put(&format!("{name}.valid"), &bits(&c.valid))
        };
        let i32s = |v: &[i32]| v.iter().flat_map(|o| o.to_le_bytes()).collect::<Vec<u8>>();
        for (name, c) in crate::rows::STRING_COLUMNS.iter().zip(&rows.strs) {
            strs(name, c)?;
        }
        for (name, c) in crate::rows::INT_COLUMNS.iter().zip(&rows.ints) {
            ints(name, c)?;
        }
        put(
            "cost.values",
            &le(&mut rows.cost.values.iter().map(|o| o.to_le_bytes())),
        )?;
        put("cost.valid", &bits(&rows.cost.valid))?;
        put("is_error.values", &bits(&rows.is_error.values))?;
        put("is_error.valid", &bits(&rows.is_error.valid))?;
        let image_offsets: &[i32] = if rows.image_offsets.is_empty() {
            &[0]
        } else {
            &rows.image_offsets
        };
        put("images.offsets", &i32s(image_offsets))?;
        strs("image_data", &rows.image_data)?;
        strs("image_mime", &rows.image_mime)?;
        put("call.entry", &i32s(&rows.call_entry))?;
        for (name, c) in ["call_id", "tool_name", "arguments"]
            .iter()
            .zip(&rows.call_strs)
        {
            strs(name, c)?;
        }
        ints("arguments_bytes", &rows.call_arguments_bytes)?;
        put("result.entry", &i32s(&rows.result_entry))?;
        strs("result_call", &rows.result_strs[0])?;
        strs("result_text", &rows.result_strs[1])?;
        ints("result_text_bytes", &rows.result_text_bytes)?;
        put(
            "result_is_error.values",
            &bits(&rows.result_is_error.values),
        )?;
        put("result_is_error.valid", &bits(&rows.result_is_error.valid))?;
        Ok(d)
    }
}

/// Count `\n` bytes of the file at `path` (memchr over the mapped file).
#[pyfunction]
fn count_newlines(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<u64> {
    let p = os_path(path)?;
    let pb = p.clone();
    py.detach(move || crate::count_newlines(&pb))
        .map_err(|e| to_py_err(e, Some(&p)))
}

/// One call of `listing::scan_file` (releases the GIL), as the tuple
/// `_sessiontree.pyi` describes.
#[pyfunction]
#[pyo3(signature = (path, start, prior, content, limit, fingerprint, texts, usage_log=false))]
#[allow(clippy::too_many_arguments)] // the Python signature's, one argument each
fn scan_listing<'py>(
    py: Python<'py>,
    path: &Bound<'_, PyAny>,
    start: u64,
    prior: &Bound<'_, PyBytes>,
    content: bool,
    limit: u64,
    fingerprint: u64,
    texts: bool,
    usage_log: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let p = os_path(path)?;
    let pb = p.clone();
    let prior = prior.as_bytes().to_vec();
    let s = py
        .detach(move || {
            crate::scan_file(
                &pb,
                start,
                &prior,
                crate::Collect {
                    content,
                    texts,
                    usage_log,
                },
                limit,
                fingerprint,
            )
        })
        .map_err(|e| to_py_err(e, Some(&p)))?;
    scan_tuple(py, &s)
}

/// A listing scan as the tuple `_sessiontree.pyi` describes (`scan_listing`).
fn scan_tuple<'py>(py: Python<'py>, s: &crate::listing::Scan) -> PyResult<Bound<'py, PyTuple>> {
    use crate::listing::{DocKind, Header, Name, UsageKind};
    let text = |b: &[u8]| id_to_py(py, b);
    let header = match &s.header {
        Header::Before => ("before", py.None()).into_pyobject(py)?,
        Header::Found(h) => ("found", PyBytes::new(py, h)).into_pyobject(py)?,
        Header::Missing(None) => ("missing", py.None()).into_pyobject(py)?,
        Header::Missing(Some((line, offset, b))) => {
            ("missing", (*line, *offset, PyBytes::new(py, b))).into_pyobject(py)?
        }
    };
    let name = match &s.name {
        Name::Unset => (false, py.None().into_bound(py)),
        Name::Set(n) => (true, text(n)?),
        Name::Cleared => (true, py.None().into_bound(py)),
    };
    let docs = s
        .docs
        .iter()
        .map(|d| {
            let kind = match d.kind {
                DocKind::User => "user",
                DocKind::Assistant => "assistant",
                DocKind::Name => "name",
            };
            (d.seq, text(&d.id)?, kind, d.time, text(&d.text)?).into_pyobject(py)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let usage = s
        .usage
        .iter()
        .map(|u| {
            let kind = match u.kind {
                UsageKind::Message => "message",
                UsageKind::Usage => "usage",
                UsageKind::Compaction => "compaction",
                UsageKind::BranchSummary => "branch_summary",
            };
            let n = u.numbers;
            let row = (
                u.seq,
                text(&u.id)?,
                text(&u.stamp)?,
                u.time,
                kind,
                text(&u.provider)?,
                text(&u.model)?,
            );
            (row, (n[0], n[1], n[2], n[3], n[4], n[5])).into_pyobject(py)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let framing = (
        s.end,
        s.eof,
        s.tail,
        s.bytes_read,
        PyBytes::new(py, &s.ends),
    );
    let facts = (
        s.message_count,
        s.first_message.as_deref().map(text).transpose()?,
        text(&s.texts)?,
        name,
        s.activity,
    );
    (
        framing,
        header,
        s.old_version,
        s.fallback,
        facts,
        PyBytes::new(py, &s.entries),
        s.entry_count,
        PyList::new(py, docs)?,
        PyList::new(py, usage)?,
        PyBytes::new(py, &s.usage_log),
    )
        .into_pyobject(py)
}

/// `report::report` (releases the GIL): the usage logs of the files in scope, oldest
/// holder first, each file's key (`"file"`), and with `active` each file's entries
/// record; `days`, when given, the zone's offset of UTC days (`report::DayOffsets`:
/// called once, with the GIL, with the days' numbers). Returns `(groups, loose, models,
/// bad)`: groups as `(key, bucket, records, sums)` (bucket: a slice number, `("day",
/// n)` for a local day, `None` for no time, `True` for all), each sum `(exact,
/// floats)` (the partials, or the values themselves), loose records as `(key, time,
/// numbers)`.
/// A report's key by name (`model`, `file` or `none`).
fn report_key(key: &str) -> PyResult<crate::ReportKey> {
    use crate::ReportKey;
    Ok(match key {
        "model" => ReportKey::Model,
        "file" => ReportKey::File,
        "none" => ReportKey::None,
        _ => return Err(PyValueError::new_err("key: model, file or none")),
    })
}

/// The core's question "which offsets has each of these UTC days" put to the caller's
/// `days` (the GIL taken for the call), answered per day by an offset (`int`), a list
/// of the day's 96 slices' offsets (`int` or `None`) or `None`; an error is kept in
/// `failed` (the answer then empty: no day placed) for the caller to raise.
fn day_offsets<'a>(
    days: &'a Py<PyAny>,
    failed: &'a mut Option<PyErr>,
) -> impl FnMut(&[i64]) -> Vec<Option<crate::DayOffset>> + 'a {
    move |utc: &[i64]| -> Vec<Option<crate::DayOffset>> {
        Python::attach(|py| {
            let got: Vec<Bound<'_, PyAny>> = days.bind(py).call1((utc.to_vec(),))?.extract()?;
            if got.len() != utc.len() {
                return Err(PyValueError::new_err("days: one answer per day"));
            }
            got.iter()
                .map(|v| {
                    if v.is_none() {
                        Ok(None)
                    } else if let Ok(one) = v.extract::<i64>() {
                        Ok(Some(crate::DayOffset::One(one)))
                    } else {
                        Ok(Some(crate::DayOffset::Slices(
                            v.extract::<Vec<Option<i64>>>()?,
                        )))
                    }
                })
                .collect()
        })
        .unwrap_or_else(|e| {
            *failed = Some(e);
            Vec::new()
        })
    }
}

#[pyfunction]
#[pyo3(signature = (logs, keys, entries, key, buckets, active, days=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn usage_report<'py>(
    py: Python<'py>,
    logs: Vec<pyo3::pybacked::PyBackedBytes>,
    keys: Vec<u32>,
    entries: Option<Vec<Vec<u8>>>,
    key: &str,
    buckets: bool,
    active: bool,
    days: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    use crate::FileLog;
    let key = report_key(key)?;
    if keys.len() != logs.len() || entries.as_ref().is_some_and(|e| e.len() != logs.len()) {
        return Err(PyValueError::new_err(
            "one key (and entries record) per log",
        ));
    }
    let mut failed: Option<PyErr> = None;
    let r = py.detach(|| {
        let failed = &mut failed;
        let mut ask = days.as_ref().map(|f| day_offsets(f, failed));
        let files: Vec<FileLog<'_>> = logs
            .iter()
            .enumerate()
            .map(|(i, log)| FileLog {
                log: log.as_ref(),
                key: keys[i],
                on_path: entries.as_ref().map(|e| on_path_mask(&e[i])),
            })
            .collect();
        let days = ask.as_mut().map(|a| a as crate::DayOffsets<'_>);
        crate::usage_report(&files, key, buckets, active, days)
    });
    if let Some(e) = failed {
        return Err(e);
    }
    report_py(py, &r)
}

/// A report as `usage_report` returns it.
fn report_py<'py>(py: Python<'py>, r: &crate::Report) -> PyResult<Bound<'py, PyTuple>> {
    use crate::Bucket;
    let groups = PyList::empty(py);
    for ((k, b), g) in &r.groups {
        let bucket = match b {
            Bucket::Slice(n) => n.into_pyobject(py)?.into_any(),
            Bucket::Day(n) => ("day", n).into_pyobject(py)?.into_any(),
            Bucket::NoTime => py.None().into_bound(py),
            Bucket::All => true.into_pyobject(py)?.to_owned().into_any(),
        };
        let sums = g
            .sums
            .iter()
            .map(|s| match &s.values {
                Some(v) => (false, v.clone()),
                None => (true, s.partials.to_vec()),
            })
            .collect::<Vec<_>>();
        groups.append((*k, bucket, g.records, sums))?;
    }
    let models = r
        .models
        .iter()
        .map(|(p, m)| Ok((id_to_py(py, p)?, id_to_py(py, m)?)))
        .collect::<PyResult<Vec<_>>>()?;
    (groups, r.loose.clone(), models, r.bad).into_pyobject(py)
}

/// `totals::update`: a file's usage totals after its usage log grew by `piece` (`log`
/// the whole log now, `entries` its entries record of `count` entries; `old` its
/// totals before, if kept). `None`: totals are not kept for it.
#[pyfunction]
#[pyo3(signature = (old, piece, log, entries, count))]
fn usage_sums<'py>(
    py: Python<'py>,
    old: Option<pyo3::pybacked::PyBackedBytes>,
    piece: pyo3::pybacked::PyBackedBytes,
    log: pyo3::pybacked::PyBackedBytes,
    entries: pyo3::pybacked::PyBackedBytes,
    count: u32,
) -> Option<Bound<'py, PyBytes>> {
    let out = py.detach(|| crate::usage_sums(old.as_deref(), &piece, &log, &entries, count));
    out.map(|b| PyBytes::new(py, &b))
}

/// A directory entry's name as the catalog stores it (`catalog/_store.db_text` of
/// `os.fsdecode(name)`): UTF-8 as it is; otherwise each byte that is not part of valid
/// UTF-8 is the lone surrogate U+DC80–U+DCFF `surrogateescape` gives it, written as
/// `surrogatepass` writes it (three bytes).
fn db_name(raw: &[u8]) -> Cow<'_, [u8]> {
    if std::str::from_utf8(raw).is_ok() {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len() * 3);
    for chunk in raw.utf8_chunks() {
        out.extend_from_slice(chunk.valid().as_bytes());
        for &b in chunk.invalid() {
            let cp = 0xDC00u32 + u32::from(b);
            out.extend_from_slice(&[
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]);
        }
    }
    Cow::Owned(out)
}

/// The fields of a `file.warm` text: the identity and the state (`None`: not six
/// integers, which the catalog never writes).
fn warm_fields(w: &str) -> Option<(crate::Ident, i64)> {
    let mut it = w.split(' ').map(|x| x.parse::<i64>().ok());
    let mut next = || it.next().flatten();
    let out = ((next()?, next()?, next()?, next()?, next()?), next()?);
    it.next().is_none().then_some(out)
}

/// A `str` or `bytes` column value's bytes, borrowed from the object (a `str`'s UTF-8).
fn name_bytes<'a>(v: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    Ok(v.cast::<PyBytes>()?.as_bytes())
}

/// A text column's value as its stored bytes: a `str`'s UTF-8, a `bytes` as it is
/// (`db_text`'s form of a text with lone surrogates), `None` for anything else.
fn text_bytes(v: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(s) = v.cast::<PyString>() {
        return s.to_str().ok().map(|s| s.as_bytes().to_vec());
    }
    v.cast::<PyBytes>().ok().map(|b| b.as_bytes().to_vec())
}

/// A warm usage report from the catalog's totals, one folder at a time
/// (`catalog/_usage._warm`): each folder's files listed and `stat`-ed here against the
/// catalog's rows, each current file's totals summed as it is read (`totals::Warm`).
#[pyclass(name = "UsageScan", module = "sessiontree._sessiontree")]
struct UsageScan {
    warm: Option<crate::UsageWarm>,
    /// The folders' listings, made on a thread of their own while the rows are read.
    listings: crate::Listings,
    key: crate::ReportKey,
    /// With `ReportKey::File`: a key per project (cwd) instead of per file.
    projects: bool,
    /// Per file added: its report key, folder (its number among the calls of
    /// `folder`), path, and the length of its name (the path's end).
    keys: Vec<u32>,
    folders: Vec<u32>,
    paths: Vec<Vec<u8>>,
    name_lens: Vec<u32>,
    calls: u32,
    cwd_keys: std::collections::HashMap<(bool, Vec<u8>), u32>,
    cwds: Vec<Py<PyAny>>,
    /// The rows the last `folder` call read, as one value (`warm_rows`), when it added
    /// its files (none for a report by project: its rows hold the cwds).
    record: Option<Vec<u8>>,
}

/// The report's sums while it is not made (`UsageScan.report` takes them).
fn unmade(warm: &mut Option<crate::UsageWarm>) -> PyResult<&mut crate::UsageWarm> {
    warm.as_mut()
        .ok_or_else(|| PyValueError::new_err("the report was made"))
}

impl UsageScan {
    /// The next folder's number and listing (waited for).
    fn next_listing(&mut self, py: Python<'_>) -> PyResult<(u32, Vec<crate::Listed>)> {
        let call = self.calls;
        self.calls += 1;
        let listings = &mut self.listings;
        let listed = py
            .detach(|| listings.next())
            .ok_or_else(|| PyValueError::new_err("more calls than folders"))?;
        Ok((call, listed))
    }

    /// Add the folder's listed files from its rows, by stored name: 0 added, 1 some file
    /// new, changed or not read to its end (`folder`).
    fn add(
        &mut self,
        call: u32,
        listed: &[crate::Listed],
        by_name: &std::collections::HashMap<&[u8], RowOf<'_, '_>>,
    ) -> PyResult<u8> {
        let warm = unmade(&mut self.warm)?;
        for f in listed {
            // A file no one can `stat` (a dangling link) is no session, as the files say.
            let Some(st) = f.st else { continue };
            let Some(row) = by_name.get(db_name(&f.name).as_ref()) else {
                return Ok(1);
            };
            if !st.is(&row.ident) {
                return Ok(1);
            }
            match row.state {
                0 => continue,
                1 => {}
                _ => return Ok(1),
            }
            // A row holds its cwd only in a report by project: a key per cwd.
            let key = match (self.key, row.cwd) {
                (crate::ReportKey::File, Some(cwd)) => {
                    let k = if cwd.is_none() {
                        (false, Vec::new())
                    } else {
                        (
                            cwd.is_instance_of::<PyBytes>(),
                            text_bytes(cwd).unwrap_or_default(),
                        )
                    };
                    let n = self.cwd_keys.len() as u32;
                    *self.cwd_keys.entry(k).or_insert_with(|| {
                        self.cwds.push(cwd.clone().unbind());
                        n
                    })
                }
                (crate::ReportKey::File, _) => warm.files(),
                _ => 0,
            };
            warm.add(key, row.totals);
            self.keys.push(key);
            self.folders.push(call);
            self.paths.push(f.path.clone());
            self.name_lens.push(f.name.len() as u32);
        }
        Ok(0)
    }

    /// Each of `files` as `(file, folder, name, path)`.
    fn named<'py>(&self, py: Python<'py>, files: Vec<u32>) -> Vec<Involved<'py>> {
        files
            .into_iter()
            .map(|f| {
                let i = f as usize;
                let p = &self.paths[i];
                let name = &p[p.len() - self.name_lens[i] as usize..];
                (
                    f,
                    self.folders[i],
                    PyBytes::new(py, name),
                    PyBytes::new(py, p),
                )
            })
            .collect()
    }
}

/// A file `UsageScan.involved` names: `(file, folder, name, path)`.
type Involved<'py> = (u32, u32, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// One `file` row as `UsageScan.folder` reads it: its identity and state, its totals
/// (`None`: none kept) and, for a report by project, its cwd as the catalog holds it.
struct RowOf<'a, 'py> {
    ident: crate::Ident,
    state: i64,
    totals: Option<&'a [u8]>,
    cwd: Option<&'a Bound<'py, PyAny>>,
}

#[pymethods]
impl UsageScan {
    /// `folders`: `os.fsencode` of each folder (or session file) of the scope, in the
    /// order `folder` is called; `key`: `model`, `file` (a key per file, in the order
    /// added), `project` (a key per cwd) or `none`; `buckets`: by slice too; `active`:
    /// the current paths' records.
    #[new]
    fn new(folders: Vec<Vec<u8>>, key: &str, buckets: bool, active: bool) -> PyResult<Self> {
        let (k, projects) = match key {
            "project" => (crate::ReportKey::File, true),
            k => (report_key(k)?, false),
        };
        Ok(UsageScan {
            warm: Some(crate::UsageWarm::new(k, buckets, active)),
            listings: crate::Listings::start(folders),
            key: k,
            projects,
            keys: Vec::new(),
            folders: Vec::new(),
            paths: Vec::new(),
            name_lens: Vec::new(),
            calls: 0,
            cwd_keys: Default::default(),
            cwds: Vec::new(),
            record: None,
        })
    }

    /// Add the session files of the next folder (`folders[n]` at the `n`th call) that the
    /// catalog holds as they are, from `rows`: each `(name, warm, totals, cwd)` of the
    /// folder's files, `warm` the `file.warm` text (`catalog/_store`: `dev ino size
    /// mtime_ns ctime_ns state`, state 0 not a session, 1 its usage log read to its end,
    /// 2 not), `totals` its `usage_sum` (1: none kept). A file that cannot be `stat`-ed is
    /// no session (the files' answer too). Returns 0 (added), 1 (some file is new,
    /// changed or not read to its end: the catalog must be brought up to date) or 2 (a
    /// row holds a value the catalog never writes).
    fn folder(&mut self, py: Python<'_>, rows: &Bound<'_, PyAny>) -> PyResult<u8> {
        self.record = None;
        let (call, listed) = self.next_listing(py)?;
        if listed.is_empty() {
            return Ok(0);
        }
        // Taken from an iterable (a cursor) as they come: a row's tuple is freed once its
        // values are held, so a folder of rows does not set off the garbage collector
        // (`fetchall`'s list held them all: ~10% of a report at 20,000 files).
        let mut parsed = Vec::with_capacity(listed.len());
        for r in rows.try_iter()? {
            let r = r?;
            let Ok(t) = r.cast::<PyTuple>() else {
                return Ok(2);
            };
            if t.len() != 4 {
                return Ok(2);
            }
            let name = t.get_item(0)?;
            let warm = t.get_item(1)?;
            let body = t.get_item(2)?;
            let cwd = t.get_item(3)?;
            let Some((ident, state)) = warm
                .cast::<PyString>()
                .ok()
                .and_then(|w| warm_fields(w.to_str().ok()?))
            else {
                return Ok(2);
            };
            let body_ok =
                body.is_instance_of::<PyBytes>() || body.extract::<i64>().is_ok_and(|b| b == 1);
            if !body_ok
                || !(name.is_instance_of::<PyString>() || name.is_instance_of::<PyBytes>())
                || !(cwd.is_none()
                    || cwd.is_instance_of::<PyString>()
                    || cwd.is_instance_of::<PyBytes>())
            {
                return Ok(2);
            }
            parsed.push((name, ident, state, body, cwd));
        }
        let mut by_name: std::collections::HashMap<&[u8], RowOf<'_, '_>> =
            std::collections::HashMap::with_capacity(parsed.len());
        let mut record = (!self.projects).then(crate::WarmRecord::default);
        for (name, ident, state, body, cwd) in &parsed {
            let name = name_bytes(name)?;
            let totals = body.cast::<PyBytes>().ok().map(|b| b.as_bytes());
            if let Some(record) = record.as_mut() {
                record.push(&crate::WarmRow {
                    name,
                    ident: *ident,
                    state: *state,
                    totals,
                });
            }
            let cwd = self.projects.then_some(cwd);
            by_name.insert(
                name,
                RowOf {
                    ident: *ident,
                    state: *state,
                    totals,
                    cwd,
                },
            );
        }
        let got = self.add(call, &listed, &by_name)?;
        if got == 0 {
            self.record = record.map(crate::WarmRecord::into_bytes);
        }
        Ok(got)
    }

    /// `folder`, from the folder's rows as one value (`record`'s, made by an earlier
    /// scan): a report by model, day, week, month or session (one by project reads the
    /// rows). 2 when `record` is not such a value (a damaged catalog's): then nothing
    /// was taken, and `folder` reads the same folder's rows.
    fn folder_record(&mut self, py: Python<'_>, record: &[u8]) -> PyResult<u8> {
        if self.projects {
            return Err(PyValueError::new_err("a report by project reads its rows"));
        }
        self.record = None;
        let Some(rows) = crate::warm_rows(record) else {
            return Ok(2);
        };
        let (call, listed) = self.next_listing(py)?;
        if listed.is_empty() {
            return Ok(0);
        }
        let by_name = rows
            .into_iter()
            .map(|r| {
                let row = RowOf {
                    ident: r.ident,
                    state: r.state,
                    totals: r.totals,
                    cwd: None,
                };
                (r.name, row)
            })
            .collect();
        self.add(call, &listed, &by_name)
    }

    /// The rows the last `folder` call read, as one value for `folder_record`; `None`
    /// when it did not add its files (or the report is by project, or the folder
    /// listed no file).
    fn record<'py>(&mut self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.record.take().map(|r| PyBytes::new(py, &r))
    }

    /// Files added.
    #[getter]
    fn files(&self) -> usize {
        self.keys.len()
    }

    /// Every file's path as `os.fsdecode` gives it, in the order added (the keys of
    /// `file`): a report by session's names.
    fn paths(&self) -> Vec<FsName> {
        self.paths.iter().map(|p| FsName(p.clone())).collect()
    }

    /// The projects' cwds as the catalog holds them (`None` for a session without one),
    /// in key order.
    fn cwds<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyAny>> {
        self.cwds.iter().map(|c| c.bind(py).clone()).collect()
    }

    /// The files added without totals (`totals::Warm::untotalled`), each `(file, folder,
    /// name, path)` as `involved` gives them: their logs go to `log_hashes` before
    /// `involved` is asked.
    fn untotalled<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Involved<'py>>> {
        let files = unmade(&mut self.warm)?.untotalled();
        Ok(self.named(py, files))
    }

    /// `file`'s copy key hashes from its usage `log` (a file `untotalled` named).
    fn log_hashes(&mut self, file: u32, log: &[u8]) -> PyResult<()> {
        unmade(&mut self.warm)?.log_hashes(file, log);
        Ok(())
    }

    /// The files whose logs the report must read (`totals::Warm::involved`): each
    /// `(file, folder, name, path)`, `folder` the number of its `folder` call, `name` the
    /// directory entry's bytes.
    fn involved<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Involved<'py>>> {
        let files = unmade(&mut self.warm)?.involved();
        Ok(self.named(py, files))
    }

    /// The report (as `usage_report` returns it) with the `involved` files, oldest holder
    /// first, each `(file, totals, log, entries)` as the catalog holds them (`entries`
    /// for an `active` report, else `None`); `None` when the totals cannot answer.
    /// With `line` (a named tuple class of `key, records` and the six sums), a report
    /// whose groups are its lines comes as `(lines, total)` instead (`Report::lines`):
    /// each a `line` whose key is `names[key]` (by file or project; the key's number
    /// without `names`), each sum rounded once, token sums that are whole numbers as
    /// `int`s, costliest first (then by key, as Python orders the keys); the total a
    /// `line` keyed `"total"`. With `period` too (`daily`, `weekly` or `monthly`), a
    /// report whose groups are local days and no time, its lines named by their day,
    /// week or month (`Report::period_lines`), in time order, and with `span` only the
    /// local days `(first, last)` (days since 1970-01-01); without `period`, with
    /// `span`, a report by key of those days, its lines one a key (by model, one a
    /// name: `Report::model_lines`).
    #[pyo3(signature = (files, days=None, line=None, period=None, span=None, names=None))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn report<'py>(
        &mut self,
        py: Python<'py>,
        files: Vec<(
            u32,
            Option<pyo3::pybacked::PyBackedBytes>,
            pyo3::pybacked::PyBackedBytes,
            Option<pyo3::pybacked::PyBackedBytes>,
        )>,
        days: Option<Py<PyAny>>,
        line: Option<Bound<'py, pyo3::types::PyType>>,
        period: Option<&str>,
        span: Option<(i64, i64)>,
        names: Option<Vec<Bound<'py, PyAny>>>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let period = match period {
            None => None,
            Some("daily") => Some(crate::Period::Day),
            Some("weekly") => Some(crate::Period::Week),
            Some("monthly") => Some(crate::Period::Month),
            Some(other) => return Err(PyValueError::new_err(format!("unknown period {other:?}"))),
        };
        let mut keys = Vec::with_capacity(files.len());
        for (f, ..) in &files {
            match self.keys.get(*f as usize) {
                Some(&k) => keys.push(k),
                None => return Err(PyValueError::new_err("not a file of this scan")),
            }
        }
        let warm = self
            .warm
            .take()
            .ok_or_else(|| PyValueError::new_err("the report was made"))?;
        let mut failed: Option<PyErr> = None;
        let r = py.detach(|| {
            let failed = &mut failed;
            let mut ask = days.as_ref().map(|f| day_offsets(f, failed));
            let logs: Vec<crate::LogFile<'_>> = files
                .iter()
                .zip(&keys)
                .map(|((f, totals, log, entries), key)| crate::LogFile {
                    file: *f,
                    totals: totals.as_deref(),
                    log: crate::FileLog {
                        log,
                        key: *key,
                        on_path: entries.as_ref().map(|e| on_path_mask(e)),
                    },
                })
                .collect();
            let days = ask.as_mut().map(|a| a as crate::DayOffsets<'_>);
            warm.finish(&logs, days)
        });
        if let Some(e) = failed {
            return Err(e);
        }
        let Some(line) = line else {
            return r.map(|r| report_py(py, &r)).transpose();
        };
        let Some(r) = r else {
            return Ok(None);
        };
        if let Some(p) = period {
            let Some((got, total)) = r.period_lines(p, span) else {
                return r_py(py, &r);
            };
            let got = got
                .iter()
                .map(|(name, records, sums)| {
                    Ok((PyString::new(py, name).into_any(), *records, *sums))
                })
                .collect::<PyResult<Vec<_>>>()?;
            return lines_py(py, &line, got, total, false);
        }
        if self.key == crate::ReportKey::Model {
            let Some((got, total)) = r.model_lines(span) else {
                return r_py(py, &r);
            };
            let got = got
                .iter()
                .map(|(name, records, sums)| Ok((id_to_py(py, name)?, *records, *sums)))
                .collect::<PyResult<Vec<_>>>()?;
            return lines_py(py, &line, got, total, true);
        }
        let Some((got, total)) = r.lines(span) else {
            return r_py(py, &r);
        };
        let got = got
            .iter()
            .map(|(k, records, sums)| {
                let key = match &names {
                    Some(n) => n
                        .get(*k as usize)
                        .cloned()
                        .ok_or_else(|| PyValueError::new_err("a key without a name"))?,
                    None => k.into_pyobject(py)?.into_any(),
                };
                Ok((key, *records, *sums))
            })
            .collect::<PyResult<Vec<_>>>()?;
        lines_py(py, &line, got, total, true)
    }
}

/// [`report_py`] as `UsageScan.report` returns it.
fn r_py<'py>(py: Python<'py>, r: &crate::Report) -> PyResult<Option<Bound<'py, PyTuple>>> {
    report_py(py, r).map(Some)
}

/// `(lines, total)` as `UsageScan.report(..., line=...)` gives them: each line a `line`
/// (`tuple.__new__`, no Python frame), the total keyed `"total"`; with `costliest`, in
/// `_usage._costliest`'s order (NaN costs last, then costliest first, then by key as
/// Python compares the keys; a stable sort, as `list.sort`).
fn lines_py<'py>(
    py: Python<'py>,
    line: &Bound<'py, pyo3::types::PyType>,
    mut got: Vec<(Bound<'py, PyAny>, u64, [f64; 6])>,
    total: (u64, [f64; 6]),
    costliest: bool,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    if costliest {
        let mut failed: Option<PyErr> = None;
        let rank = |c: f64| (c.is_nan(), if c.is_nan() { 0.0 } else { -c });
        got.sort_by(|a, b| {
            let (na, ca) = rank(a.2[5]);
            let (nb, cb) = rank(b.2[5]);
            na.cmp(&nb)
                .then(ca.partial_cmp(&cb).unwrap_or(std::cmp::Ordering::Equal))
                .then_with(|| match (a.0.lt(&b.0), b.0.lt(&a.0)) {
                    (Ok(true), _) => std::cmp::Ordering::Less,
                    (_, Ok(true)) => std::cmp::Ordering::Greater,
                    (Err(e), _) | (_, Err(e)) => {
                        failed.get_or_insert(e);
                        std::cmp::Ordering::Equal
                    }
                    _ => std::cmp::Ordering::Equal,
                })
        });
        if let Some(e) = failed {
            return Err(e);
        }
    }
    let new = py.get_type::<PyTuple>().getattr("__new__")?;
    let out = PyList::empty(py);
    for (key, records, sums) in got {
        out.append(new.call1((line, line_py(py, key, records, &sums)?))?)?;
    }
    let key = PyString::new(py, "total").into_any();
    let total = new.call1((line, line_py(py, key, total.0, &total.1)?))?;
    Ok(Some(PyTuple::new(py, [out.into_any(), total])?))
}

/// A report line's fields: `(key, records, six sums)`, the five token sums that are
/// whole numbers as `int`s (`_usage._whole`), the cost a float.
fn line_py<'py>(
    py: Python<'py>,
    key: Bound<'py, PyAny>,
    records: u64,
    sums: &[f64; 6],
) -> PyResult<Bound<'py, PyTuple>> {
    let mut items = Vec::with_capacity(8);
    items.push(key);
    items.push(records.into_pyobject(py)?.into_any());
    for (i, &v) in sums.iter().enumerate() {
        let whole = i < 5 && v.is_finite() && v.fract() == 0.0;
        items.push(if whole && v.abs() < 9_223_372_036_854_775_808.0 {
            // |v| < 2**63: a whole double there is an i64 exactly.
            (v as i64).into_pyobject(py)?.into_any()
        } else if whole {
            py.get_type::<pyo3::types::PyInt>().call1((v,))?
        } else {
            v.into_pyobject(py)?.into_any()
        });
    }
    PyTuple::new(py, items)
}

/// A query's terms as the native rules read them: each a list of words; `uncased` the
/// query's non-ASCII characters Python holds uncased.
fn query_terms(terms: &[Vec<String>], uncased: &str) -> PyResult<Vec<crate::Term>> {
    let out = terms_of(terms, uncased);
    if out.is_empty()
        || out
            .iter()
            .any(|t| t.words.is_empty() || t.words.iter().any(Vec::is_empty))
    {
        return Err(PyValueError::new_err(
            "no terms, or a term with an empty word",
        ));
    }
    Ok(out)
}

/// The terms as the native rules read them, unchecked.
fn terms_of(terms: &[Vec<String>], uncased: &str) -> Vec<crate::Term> {
    use crate::{PChar, Term};
    terms
        .iter()
        .map(|words| Term {
            words: words
                .iter()
                .map(|w| {
                    w.chars()
                        .map(|c| PChar::new(c as u32, uncased.contains(c)))
                        .collect()
                })
                .collect(),
        })
        .collect()
}

fn path_of(b: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(b))
}

type PiecePy = (u32, u64, u64, u64, u32);

fn pieces_py(pieces: &[crate::Piece]) -> Vec<PiecePy> {
    pieces
        .iter()
        .map(|p| (p.file, p.epoch, p.start, p.end, p.docs))
        .collect()
}

fn role_name(r: u8) -> &'static str {
    match r {
        0 => "user",
        1 => "assistant",
        _ => "name",
    }
}

/// `search::index::build` (releases the GIL): index pieces of files into new segments
/// in `folder`. `files`: `(path, file id, epoch, start, end, prior entries record)`.
/// Returns `(segments, outcomes, failure)`: segments as `(name, size, pieces)`, pieces
/// `(file, epoch, start, end, docs)`; one outcome per piece (`"done"`, `"python"`,
/// `"changed"` or an error's words); `failure` why a segment could not be written.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn index_build(
    py: Python<'_>,
    folder: Vec<u8>,
    files: Vec<(Vec<u8>, u32, u64, u64, u64, Vec<u8>)>,
    threads: usize,
    max_postings: usize,
) -> (
    Vec<(String, u64, Vec<PiecePy>)>,
    Vec<String>,
    Option<String>,
) {
    use crate::{Indexed, ToIndex};
    let dir = path_of(folder);
    let files: Vec<ToIndex> = files
        .into_iter()
        .map(|(p, file, epoch, start, end, prior)| ToIndex {
            path: path_of(p),
            file,
            epoch,
            start,
            end,
            prior,
        })
        .collect();
    let (written, outcomes, failure) =
        py.detach(|| crate::index_build(&dir, &files, threads, max_postings));
    let segs = written
        .iter()
        .map(|w| (w.name.clone(), w.size, pieces_py(&w.pieces)))
        .collect();
    let outcomes = outcomes
        .into_iter()
        .map(|o| match o {
            Indexed::Done => "done".to_string(),
            Indexed::Python => "python".to_string(),
            Indexed::Changed => "changed".to_string(),
            Indexed::Error(e) => format!("error: {e}"),
        })
        .collect();
    (segs, outcomes, failure)
}

/// The pieces of the segment at `path` (`(file, epoch, start, end, docs)`).
///
/// Raises `OSError` if it cannot be read or is damaged.
#[pyfunction]
fn segment_pieces(path: Vec<u8>) -> PyResult<Vec<PiecePy>> {
    let p = path_of(path);
    let s = crate::Segment::open(&p).map_err(|e| to_py_err(e, Some(&p)))?;
    Ok(pieces_py(&s.pieces()))
}

/// `search::segment::merge` (releases the GIL): the segments at `inputs` into a new
/// one in `folder`, keeping the pieces of `live` (`(file, epoch, s_end)`: a piece lives
/// if its file's epoch is this one and it ends by `s_end`). Returns `(name, size,
/// pieces)`.
///
/// Raises `OSError` if an input cannot be read or is damaged, or the output cannot be
/// written.
#[pyfunction]
fn index_merge(
    py: Python<'_>,
    folder: Vec<u8>,
    inputs: Vec<Vec<u8>>,
    live: Vec<(u32, u64, u64)>,
) -> PyResult<(String, u64, Vec<PiecePy>)> {
    let dir = path_of(folder);
    let inputs: Vec<PathBuf> = inputs.into_iter().map(path_of).collect();
    let live: std::collections::HashMap<u32, (u64, u64)> =
        live.into_iter().map(|(f, e, s)| (f, (e, s))).collect();
    py.detach(|| {
        let segs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let name = crate::search::index::fresh_name();
        let tmp = dir.join(format!(".{name}.tmp"));
        let merged = crate::merge_segments(
            &segs,
            |p| {
                live.get(&p.file)
                    .is_some_and(|&(e, s)| e == p.epoch && p.end <= s)
            },
            &tmp,
        )
        .and_then(|got| Ok((got, std::fs::rename(&tmp, dir.join(&name))?)));
        let ((size, pieces), ()) = merged.inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp); // nothing left behind (a full disk)
        })?;
        Ok((name, size, pieces_py(&pieces)))
    })
    .map_err(|e: crate::Error| to_py_err(e, Some(&dir)))
}

/// `search::index::query`'s answer as Python takes it ([`SearchScan::query`]) (`ValueError` for a query the index
/// cannot narrow, `OSError` for a segment that cannot be read or is damaged).
fn answer_py(
    py: Python<'_>,
    r: std::result::Result<crate::Answer, String>,
) -> PyResult<Bound<'_, PyTuple>> {
    let a = match r {
        Ok(a) => a,
        Err(e) if e.starts_with("a term") => return Err(PyValueError::new_err(e)),
        Err(e) => return Err(PyOSError::new_err(e)),
    };
    let text = |b: &[u8]| id_to_py(py, b);
    let unsure = a
        .unsure
        .iter()
        .map(|u| {
            (
                u.rank,
                u.seq,
                u.offset,
                text(&u.id)?,
                role_name(u.role),
                u.time,
                text(&u.text)?,
            )
                .into_pyobject(py)
        })
        .collect::<PyResult<Vec<_>>>()?;
    (
        a.total,
        HitKeys { hits: a.top },
        PyList::new(py, unsure)?,
        a.stale,
    )
        .into_pyobject(py)
}

/// A warm search's freshness check and its index query (`catalog/_search._from_index`):
/// the folders are listed and `stat`-ed on a thread of their own (`stat::Listings`)
/// while the catalog's rows are read, and beside it once they are; each listed file is
/// checked against its row here (`search::index::Row::held`). What is kept per file is
/// its path, name, catalog id, device, inode, epoch and search end, no Python object.
/// The files the index holds are ranked by path, as Python sorts paths (the order its
/// ties follow).
#[pyclass(name = "SearchScan", module = "sessiontree._sessiontree")]
struct SearchScan {
    listings: crate::Listings,
    /// Each folder's rows, by the name as the catalog stores it (`blob`: as a BLOB),
    /// until the listings are checked against them.
    rows: Vec<Vec<(Vec<u8>, bool, crate::SearchRow)>>,
    held: Vec<HeldFile>,
    /// The files listed that the index does not hold, in listing order.
    others: Vec<crate::Listed>,
    checked: bool,
}

/// A file the index holds as it is.
struct HeldFile {
    path: Vec<u8>,
    /// The directory entry's name; `blob`: the row stores it as a BLOB (`db_text`).
    name: Vec<u8>,
    blob: bool,
    st: crate::FileStat,
    id: u32,
    epoch: u64,
    s_end: u64,
}

/// A listed file as `folder_files` gives it: `(name, path, stat or None)`.
type ListedPy = (FsName, FsName, Option<StatTuple>);

fn listed_py(name: &[u8], path: &[u8], st: Option<crate::FileStat>) -> ListedPy {
    (
        FsName(name.to_vec()),
        FsName(path.to_vec()),
        st.map(|s| (s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns)),
    )
}

/// A `file_search` row (`_Search._ROW`: `name, id, dev, ino, size, mtime_ns, ctime_ns,
/// l_end, tail, problem, old, epoch, s_end`) with the types `catalog/_store.COLUMN_TYPES`
/// allows: the name's bytes as stored, whether it is a BLOB, the row; `None` for any
/// other value (damage).
fn search_row(t: &Bound<'_, PyTuple>) -> Option<(Vec<u8>, bool, crate::SearchRow)> {
    if t.len() != 13 {
        return None;
    }
    let v: Vec<Bound<'_, PyAny>> = t.iter().collect();
    let int = |i: usize| -> Option<i64> {
        let x = &v[i];
        if !x.is_exact_instance_of::<pyo3::types::PyInt>() {
            return None;
        }
        x.extract::<i64>().ok()
    };
    let s_end = if v[12].is_none() {
        None
    } else {
        Some(int(12)?)
    };
    let problem = !v[9].is_none();
    if problem
        && !(v[9].is_exact_instance_of::<PyString>() || v[9].is_exact_instance_of::<PyBytes>())
    {
        return None;
    }
    let blob = v[0].is_exact_instance_of::<PyBytes>();
    if !blob && !v[0].is_exact_instance_of::<PyString>() {
        return None;
    }
    let row = crate::SearchRow {
        id: int(1)?,
        ident: (int(2)?, int(3)?, int(4)?, int(5)?, int(6)?),
        l_end: int(7)?,
        tail: int(8)?,
        problem,
        old: int(10)?,
        epoch: int(11)?,
        s_end,
    };
    Some((name_bytes(&v[0]).ok()?.to_vec(), blob, row))
}

#[pymethods]
impl SearchScan {
    /// `folders`: `os.fsencode` of each folder (or session file) of the scope, in the
    /// order `folder` is called.
    #[new]
    fn new(folders: Vec<Vec<u8>>) -> Self {
        SearchScan {
            listings: crate::Listings::start(folders),
            rows: Vec::new(),
            held: Vec::new(),
            others: Vec::new(),
            checked: false,
        }
    }

    /// Take the next folder's rows (`folders[n]` at the `n`th call) from `rows` (an
    /// iterable, a cursor: each a `file_search` row as `search_row` reads it). `False`
    /// when a row holds a value the catalog never writes.
    fn folder(&mut self, rows: &Bound<'_, PyAny>) -> PyResult<bool> {
        if self.checked {
            return Err(PyValueError::new_err("the folders were checked"));
        }
        let mut parsed = Vec::new();
        for r in rows.try_iter()? {
            let Some(r) = r?.cast::<PyTuple>().ok().and_then(search_row) else {
                return Ok(false);
            };
            parsed.push(r);
        }
        self.rows.push(parsed);
        Ok(true)
    }

    /// The files the index holds.
    fn __len__(&mut self, py: Python<'_>) -> PyResult<usize> {
        self.check(py)?;
        Ok(self.held.len())
    }

    /// The other files listed, as `folder_files` gives them, in listing order.
    fn others(&mut self, py: Python<'_>) -> PyResult<Vec<ListedPy>> {
        self.check(py)?;
        Ok(self
            .others
            .iter()
            .map(|f| listed_py(&f.name, &f.path, f.st))
            .collect())
    }

    /// Every file listed (those the index holds first, by path), as `folder_files`
    /// gives them: for a search the index cannot answer.
    fn listed(&mut self, py: Python<'_>) -> PyResult<Vec<ListedPy>> {
        self.check(py)?;
        let held = self
            .held
            .iter()
            .map(|h| listed_py(&h.name, &h.path, Some(h.st)));
        let others = self
            .others
            .iter()
            .map(|f| listed_py(&f.name, &f.path, f.st));
        Ok(held.chain(others).collect())
    }

    /// The paths of the files the index holds, by rank (`os.fsencode` form).
    fn paths<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        self.check(py)?;
        Ok(self
            .held
            .iter()
            .map(|h| PyBytes::new(py, &h.path))
            .collect())
    }

    /// File `rank`: `(path, id, name, dev, ino)`, the name as the catalog stores it.
    fn file<'py>(
        &mut self,
        py: Python<'py>,
        rank: usize,
    ) -> PyResult<(FsName, u32, Bound<'py, PyAny>, u64, u64)> {
        self.check(py)?;
        let h = self
            .held
            .get(rank)
            .ok_or_else(|| PyIndexError::new_err("no file of that rank"))?;
        let stored = db_name(&h.name);
        let name = if h.blob {
            PyBytes::new(py, &stored).into_any()
        } else {
            PyString::new(py, &String::from_utf8_lossy(&stored)).into_any()
        };
        Ok((FsName(h.path.clone()), h.id, name, h.st.dev, h.st.ino))
    }

    /// `search::index::query` over the files the index holds (releases the GIL).
    #[allow(clippy::too_many_arguments)]
    fn query<'py>(
        &mut self,
        py: Python<'py>,
        segments: Vec<Vec<u8>>,
        terms: Vec<Vec<String>>,
        uncased: &str,
        k: Option<usize>,
        recent: bool,
        threads: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let terms = query_terms(&terms, uncased)?;
        self.check(py)?;
        let seg_paths: Vec<PathBuf> = segments.into_iter().map(path_of).collect();
        let held = &self.held;
        let r = py.detach(|| {
            let paths: Vec<PathBuf> = held.iter().map(|h| path_of(h.path.clone())).collect();
            let scope: std::collections::HashMap<u32, crate::Scope> = held
                .iter()
                .enumerate()
                .map(|(rank, h)| {
                    let s = crate::Scope {
                        epoch: h.epoch,
                        s_end: h.s_end,
                        rank: rank as u32,
                    };
                    (h.id, s)
                })
                .collect();
            let mut segs = Vec::with_capacity(seg_paths.len());
            for p in &seg_paths {
                segs.push(crate::Segment::open(p).map_err(|e| format!("{}: {e}", p.display()))?);
            }
            crate::index_query(&segs, &scope, &terms, &paths, k, recent, threads)
        });
        answer_py(py, r)
    }
}

impl SearchScan {
    /// Once every folder's rows are in: list the folders left (beside the listing
    /// thread), check each listed file against its row, rank the files held.
    fn check(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.checked {
            return Ok(());
        }
        let SearchScan {
            listings,
            rows,
            held,
            others,
            ..
        } = self;
        py.detach(|| {
            listings.help();
            for rows in rows.drain(..) {
                let Some(listed) = listings.next() else {
                    return Err("more calls than folders");
                };
                let by_name: std::collections::HashMap<&[u8], &(Vec<u8>, bool, crate::SearchRow)> =
                    rows.iter().map(|r| (r.0.as_slice(), r)).collect();
                for f in listed {
                    let got = f.st.and_then(|st| {
                        let (_, blob, row) = by_name.get(db_name(&f.name).as_ref())?;
                        Some((st, *blob, row.held(&st)?))
                    });
                    match got {
                        Some((st, blob, (id, epoch, s_end))) => held.push(HeldFile {
                            name: f.name,
                            path: f.path,
                            blob,
                            st,
                            id,
                            epoch,
                            s_end,
                        }),
                        None => others.push(f),
                    }
                }
            }
            // UTF-8's byte order is its code points' order: the decoded keys only for
            // names that are not UTF-8 (a Vec per path was 5% of a warm search).
            if held.iter().all(|h| std::str::from_utf8(&h.path).is_ok()) {
                held.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            } else {
                held.sort_by_cached_key(|h| crate::code_points(&h.path));
            }
            Ok(())
        })
        .map_err(PyValueError::new_err)?;
        self.checked = true;
        Ok(())
    }
}

/// The decided hits of [`SearchScan::query`], best first, kept here (about 56 bytes a hit):
/// all the hits of a common word over a large history are made into Python objects a
/// chunk at a time ([`HitKeys::take`]), never all at once.
#[pyclass(frozen, name = "HitKeys", module = "sessiontree._sessiontree")]
pub struct HitKeys {
    hits: Vec<crate::search::index::KeyHit>,
}

#[pymethods]
impl HitKeys {
    fn __len__(&self) -> usize {
        self.hits.len()
    }

    /// The files (ranks) of hits `[start, start + n)`, each once.
    fn ranks(&self, start: usize, n: usize) -> Vec<u32> {
        let mut r: Vec<u32> = self.slice(start, n).iter().map(|h| h.rank).collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// Hits `[start, start + n)` (fewer at the end): each `(rank, seq, offset, length,
    /// role, time, score, anchor)`.
    #[allow(clippy::type_complexity)]
    fn take(
        &self,
        start: usize,
        n: usize,
    ) -> Vec<(u32, u32, u64, u32, &'static str, Option<f64>, u64, u64)> {
        self.slice(start, n)
            .iter()
            .map(|h| {
                (
                    h.rank,
                    h.seq,
                    h.offset,
                    h.len,
                    role_name(h.role),
                    h.time,
                    h.score,
                    h.anchor,
                )
            })
            .collect()
    }
}

impl HitKeys {
    fn slice(&self, start: usize, n: usize) -> &[crate::search::index::KeyHit] {
        let start = start.min(self.hits.len());
        &self.hits[start..start.saturating_add(n).min(self.hits.len())]
    }
}

/// `search::index::snippets` (releases the GIL): the snippets of hits `(rank, offset,
/// length, role, anchor)` (as `SearchScan.query` gives them) read from `paths` (by rank):
/// each `("done", entry_id, snippet, marks)`, `("text", entry_id, text)` (only Python
/// builds it) or `("stale", None)`.
#[pyfunction]
fn index_snippets<'py>(
    py: Python<'py>,
    paths: Vec<Vec<u8>>,
    hits: Vec<(u32, u64, u32, String, u64)>,
    terms: Vec<Vec<String>>,
    uncased: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    use crate::search::index::{KeyHit, Snippet};
    let terms = query_terms(&terms, uncased)?;
    let paths: Vec<PathBuf> = paths.into_iter().map(path_of).collect();
    let keys: Vec<KeyHit> = hits
        .iter()
        .map(|(rank, offset, len, role, anchor)| KeyHit {
            rank: *rank,
            seq: 0,
            offset: *offset,
            len: *len,
            role: match role.as_str() {
                "user" => 0,
                "assistant" => 1,
                _ => 2,
            },
            time: None,
            score: 0,
            anchor: *anchor,
        })
        .collect();
    let got = py.detach(|| crate::search::index::snippets(&paths, &keys, &terms, threads));
    let out = PyList::empty(py);
    for s in got {
        let item = match s {
            Snippet::Done(id, snip, marks) => ("done", id_to_py(py, &id)?, snip, marks)
                .into_pyobject(py)?
                .into_any(),
            Snippet::Text(id, text) => ("text", id_to_py(py, &id)?, id_to_py(py, &text)?)
                .into_pyobject(py)?
                .into_any(),
            Snippet::Stale => ("stale", py.None()).into_pyobject(py)?.into_any(),
        };
        out.append(item)?;
    }
    Ok(out)
}

/// A search's hits written as `--json` writes them (`search::hits_json`), a chunk at
/// a time: made with the paths the hits' ranks index and the query; each file's
/// shared fields given once (`head`), then `write` for each chunk.
#[pyclass(name = "HitsJson", module = "sessiontree._sessiontree")]
pub struct HitsJson {
    paths: Vec<PathBuf>,
    terms: Vec<crate::Term>,
    heads: Vec<Option<crate::search::hits_json::Head>>,
}

#[pymethods]
impl HitsJson {
    #[new]
    fn new(paths: Vec<Vec<u8>>, terms: Vec<Vec<String>>, uncased: &str) -> PyResult<Self> {
        let paths: Vec<PathBuf> = paths.into_iter().map(path_of).collect();
        let n = paths.len();
        Ok(HitsJson {
            paths,
            terms: query_terms(&terms, uncased)?,
            heads: (0..n).map(|_| None).collect(),
        })
    }

    /// The fields the hits of file `rank` share; `path_bits` the entries on its current
    /// path as a bitmap (bit `seq`), for hits whose `on_path` is `None`.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (rank, path, session_id, session_name, cwd, open, path_bits))]
    fn head(
        &mut self,
        rank: usize,
        path: String,
        session_id: String,
        session_name: Option<String>,
        cwd: String,
        open: String,
        path_bits: Option<Bound<'_, PyBytes>>,
    ) -> PyResult<()> {
        let slot = self
            .heads
            .get_mut(rank)
            .ok_or_else(|| PyIndexError::new_err("rank out of range"))?;
        *slot = Some(crate::search::hits_json::Head {
            path,
            session_id,
            session_name,
            cwd,
            open,
            path_bits: path_bits.map(|b| b.as_bytes().to_vec()),
        });
        Ok(())
    }

    /// The hits `(rank, offset, length, role, anchor, seq, time, score, on_path)` as
    /// the items of `--json`'s `hits` list (releases the GIL while their snippets are
    /// read with `threads` threads), or `None` where Python must write them.
    #[allow(clippy::type_complexity)]
    fn write<'py>(
        &self,
        py: Python<'py>,
        hits: Vec<(
            u32,
            u64,
            u32,
            String,
            u64,
            u32,
            Option<f64>,
            u64,
            Option<bool>,
        )>,
        threads: usize,
    ) -> Option<Bound<'py, PyBytes>> {
        use crate::search::hits_json::{write, JsonHit};
        use crate::search::index::KeyHit;
        let hits: Vec<JsonHit> = hits
            .into_iter()
            .map(
                |(rank, offset, len, role, anchor, seq, time, score, on_path)| JsonHit {
                    key: KeyHit {
                        rank,
                        seq,
                        offset,
                        len,
                        role: match role.as_str() {
                            "user" => 0,
                            "assistant" => 1,
                            _ => 2,
                        },
                        time,
                        score,
                        anchor,
                    },
                    on_path,
                },
            )
            .collect();
        let got = py.detach(|| write(&self.paths, &self.heads, &hits, &self.terms, threads));
        got.map(|b| PyBytes::new(py, &b))
    }

    /// [`HitsJson::write`] of the index's hits `[start, start + n)` of `keys` (their
    /// `on_path` from their files' heads).
    fn write_keys<'py>(
        &self,
        py: Python<'py>,
        keys: PyRef<'py, HitKeys>,
        start: usize,
        n: usize,
        threads: usize,
    ) -> Option<Bound<'py, PyBytes>> {
        use crate::search::hits_json::{write, JsonHit};
        let hits: Vec<JsonHit> = keys
            .slice(start, n)
            .iter()
            .map(|&key| JsonHit { key, on_path: None })
            .collect();
        let got = py.detach(|| write(&self.paths, &self.heads, &hits, &self.terms, threads));
        got.map(|b| PyBytes::new(py, &b))
    }
}

/// `search::search_ranked` (releases the GIL): `paths` as `bytes` (`os.fsencode`, in
/// the order that breaks ties), `terms` each a list of words (`None`: a regular
/// expression, every picked entry's text goes back), `uncased` the query's non-ASCII
/// characters Python holds uncased, `k` the decided hits wanted (`None`: all), best
/// first by relevance or (`recent`) newest; `literals`, for a regular expression, the
/// runs of ASCII letters and digits every match holds (the lines picked hold one, the
/// texts handed back all).
/// Returns `(files, total, top, undecided)` as `_sessiontree.pyi` describes.
#[pyfunction]
#[pyo3(signature = (paths, terms, uncased, threads, k, recent, literals=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn search_files<'py>(
    py: Python<'py>,
    paths: Vec<Vec<u8>>,
    terms: Option<Vec<Vec<String>>>,
    uncased: &str,
    threads: usize,
    k: Option<usize>,
    recent: bool,
    literals: Vec<String>,
) -> PyResult<Bound<'py, PyTuple>> {
    use crate::listing::{DocKind, Name};
    use crate::{FileResult, Hit, Judged, Query};
    let paths: Vec<PathBuf> = paths.into_iter().map(path_of).collect();
    let q = match terms {
        None => {
            if !literals.iter().all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
            }) {
                return Err(PyValueError::new_err(
                    "a literal that is not a run of lowercase ASCII letters and digits",
                ));
            }
            Query {
                terms: Vec::new(),
                regex: true,
                literals: literals.into_iter().map(String::into_bytes).collect(),
            }
        }
        Some(terms) => Query {
            terms: query_terms(&terms, uncased)?,
            regex: false,
            literals: Vec::new(),
        },
    };
    let (results, ranked) =
        py.detach(|| crate::search::search_ranked(&paths, &q, threads, k, recent));
    let text = |b: &[u8]| id_to_py(py, b);
    let files = PyList::empty(py);
    for r in results {
        let item = match r {
            FileResult::Session {
                header, name, read, ..
            } => {
                let name = match &name {
                    Name::Unset => (false, py.None().into_bound(py)),
                    Name::Set(n) => (true, text(n)?),
                    Name::Cleared => (true, py.None().into_bound(py)),
                };
                ("session", header.map(|h| PyBytes::new(py, &h)), name, read)
                    .into_pyobject(py)?
                    .into_any()
            }
            FileResult::NotSession { read } => ("not_session", read).into_pyobject(py)?.into_any(),
            FileResult::Python { read } => ("python", read).into_pyobject(py)?.into_any(),
            FileResult::Error(e) => ("error", e).into_pyobject(py)?.into_any(),
        };
        files.append(item)?;
    }
    let hit = |i: usize, h: &Hit| {
        let role = match h.kind {
            DocKind::User => "user",
            DocKind::Assistant => "assistant",
            DocKind::Name => "name",
        };
        let (score, anchor, body) = match &h.judged {
            Judged::Hit { score, anchor } => (Some(*score), Some(*anchor), None),
            Judged::Undecided(t) => (None, None, Some(text(t)?)),
        };
        (
            i,
            h.seq,
            h.offset,
            h.len,
            text(&h.id)?,
            role,
            h.time,
            h.on_path,
            score,
            anchor,
            body,
        )
            .into_pyobject(py)
    };
    let top = ranked
        .top
        .iter()
        .map(|(i, h)| hit(*i, h))
        .collect::<PyResult<Vec<_>>>()?;
    let undecided = ranked
        .undecided
        .iter()
        .map(|(i, h)| hit(*i, h))
        .collect::<PyResult<Vec<_>>>()?;
    (
        files,
        ranked.total,
        PyList::new(py, top)?,
        PyList::new(py, undecided)?,
    )
        .into_pyobject(py)
}

/// The search rules' tables (`search::rules`), for `tests/test_search_rules.py` to
/// hold to Python's `re` and `str.isalnum`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn search_tables() -> (Vec<u32>, Vec<(u32, u8)>, Vec<(u32, u32)>) {
    (
        crate::JS_WHITESPACE.to_vec(),
        crate::ASCII_FOLDS.to_vec(),
        crate::NOT_ALNUM.to_vec(),
    )
}

/// `search::rules` over one text, for tests: `("miss"|"undecided", None)` or
/// `("hit", (score, anchor, snippet, marks))`.
#[pyfunction]
fn judge_text<'py>(
    py: Python<'py>,
    terms: Vec<Vec<String>>,
    uncased: &str,
    text: &[u8],
) -> PyResult<Bound<'py, PyTuple>> {
    use crate::search::rules::{judge, snippet, Chars, Outcome};
    let terms = terms_of(&terms, uncased);
    let chars = Chars::of(text);
    match judge(&terms, &chars) {
        Outcome::Miss => ("miss", py.None()).into_pyobject(py),
        Outcome::Undecided => ("undecided", py.None()).into_pyobject(py),
        Outcome::Hit { score, anchor } => match snippet(&terms, &chars, anchor as usize) {
            Ok((s, m)) => ("hit", (score, anchor, s, m)).into_pyobject(py),
            Err(_) => ("undecided", py.None()).into_pyobject(py),
        },
    }
}

/// `stat::unchanged`: `stat(path)` still shows this device, inode, size and mtime
/// (`_filestate.FileWatch.check`'s early return). The wait for `stat` is detached, as
/// `os.stat` releases the GIL.
#[pyfunction]
fn stat_unchanged(
    py: Python<'_>,
    path: &Bound<'_, PyBytes>,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
) -> bool {
    let seen = crate::Seen {
        dev,
        ino,
        size,
        mtime_ns,
    };
    let name = path.as_bytes();
    py.detach(|| crate::stat_unchanged(name, &seen))
}

/// `dev, ino, size, mtime_ns, ctime_ns` of a listed file (`stat::FileStat`).
type StatTuple = (u64, u64, u64, i128, i128);

/// `stat::folder_files`: the `*.jsonl` regular files of `folder` (or the one file it
/// names), unordered, as `(name, path, stat)`: the name and path decoded as `os.fsdecode`
/// does, the stat `None` where the file cannot be `stat`-ed
/// (`catalog/_files.folder_files`, the one listing rule). The listing is detached, as
/// `os.scandir` and `os.stat` release the GIL.
#[pyfunction]
fn folder_files(py: Python<'_>, folder: &Bound<'_, PyBytes>) -> Vec<ListedPy> {
    let folder = folder.as_bytes();
    let listed = py.detach(|| crate::folder_files(folder));
    listed
        .into_iter()
        .map(|f| listed_py(&f.name, &f.path, f.st))
        .collect()
}

/// `stat::walk`: `root` and every folder under it, each once (`cli/_scope._walk`), as
/// `os.fsdecode` names them; `seen` holds the `(st_dev, st_ino)` of folders already
/// walked and gets each listed one. Detached while it walks, as `os.walk` is between
/// entries.
#[pyfunction]
fn walk_folders(
    py: Python<'_>,
    root: &Bound<'_, PyBytes>,
    seen: &Bound<'_, pyo3::types::PySet>,
) -> PyResult<Vec<FsName>> {
    let mut walked = crate::Walked::new();
    for k in seen.iter() {
        walked.insert(k.extract::<(u64, u64)>()?);
    }
    let before = walked.clone();
    let root = root.as_bytes();
    let got = py.detach(|| crate::walk(root, &mut walked));
    for k in walked.difference(&before) {
        seen.add(*k)?;
    }
    Ok(got.into_iter().map(FsName).collect())
}

/// `source::birth_ns` of the open file descriptor `fd` (borrowed, not closed): its
/// birth time in ns, 0 where the file system keeps none or `fd` cannot be `statx`ed
/// (`_filestate.inode_marks`).
#[pyfunction]
fn birth_ns(fd: i32) -> i128 {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return 0;
    }
    // SAFETY: the caller's descriptor, open for the call (Python holds its file object);
    // `ManuallyDrop` never closes it, and only `fstat`/`statx` is done with it.
    let file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    file.metadata().map_or(0, |m| crate::birth_ns(&m))
}

/// `escape::json_unsafe`: `data` holds a character JSON output escapes (DEL, C1, ALM,
/// LRM/RLM, U+2028-U+202E, U+2066-U+2069), as `view/_text.py`'s expression finds them.
#[pyfunction]
fn json_unsafe(py: Python<'_>, data: &Bound<'_, PyBytes>) -> bool {
    let data = data.as_bytes();
    py.detach(|| crate::json_unsafe(data))
}

/// `view/_figures.py` `number_column(values, style)`: each of `values` written in
/// `style` (`figures::Style::named`), or `None` when one is anything but an exact
/// `int` within 64 bits or a `float` (those are left to the Python rules).
#[pyfunction]
fn number_column<'py>(
    values: &Bound<'py, PyAny>,
    style: &str,
) -> PyResult<Option<Vec<Bound<'py, PyString>>>> {
    use crate::figures::{write, Figure, Style};
    use pyo3::types::{PyFloat, PyInt};
    let Some(style) = Style::named(style) else {
        return Err(PyValueError::new_err(format!("unknown style {style:?}")));
    };
    let py = values.py();
    let mut out = Vec::with_capacity(values.len().unwrap_or(0));
    let mut text = String::new();
    for v in values.try_iter()? {
        let v = v?;
        let x = if let Ok(f) = v.cast_exact::<PyFloat>() {
            Figure::Float(f.value())
        } else if v.is_exact_instance_of::<PyInt>() {
            match v.extract::<i64>() {
                Ok(n) => Figure::Int(n),
                Err(_) => return Ok(None),
            }
        } else {
            return Ok(None);
        };
        text.clear();
        write(&mut text, x, style);
        out.push(PyString::new(py, &text));
    }
    Ok(Some(out))
}

/// `view/_cells.py` `plain_columns(columns, right)`: the table's text (`table.rs`),
/// `sizes[k]` column `k`'s cell widths (`None`: its cells are ASCII). The first
/// `len(right)` columns are written, as `zip` takes them. `None` when a cell holds a
/// lone surrogate (no UTF-8 spells it: the Python statement writes that table).
///
/// Raises `TypeError` for a cell that is not a `str`, `ValueError` for columns of
/// unequal lengths or sizes not one a cell.
#[pyfunction]
fn plain_columns<'py>(
    py: Python<'py>,
    columns: &Bound<'py, PyAny>,
    right: Vec<bool>,
    sizes: Vec<Option<Vec<usize>>>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let mut held: Vec<Vec<Bound<'py, PyString>>> = Vec::with_capacity(right.len());
    for (column, _) in columns.try_iter()?.zip(&right) {
        let mut cells = Vec::new();
        for cell in column?.try_iter()? {
            cells.push(cell?.cast_into::<PyString>()?);
        }
        held.push(cells);
    }
    if sizes.len() < held.len() {
        return Err(PyValueError::new_err(
            "a size list (or None) for each column",
        ));
    }
    let mut cols = Vec::with_capacity(held.len());
    for ((cells, &right), sizes) in held.iter().zip(&right).zip(sizes) {
        let Ok(cells) = cells.iter().map(|c| c.to_str()).collect::<PyResult<_>>() else {
            return Ok(None);
        };
        cols.push(crate::TableColumn {
            cells,
            sizes,
            right,
        });
    }
    let text = crate::plain_columns(&cols).ok_or_else(|| {
        PyValueError::new_err("columns of unequal lengths, or sizes not one a cell")
    })?;
    Ok(Some(PyString::new(py, &text)))
}

/// Nesting `plain_json` takes, as `view/_text.py`'s `_PLAIN_DEPTH`.
const PLAIN_DEPTH: usize = 100;

/// Most room `plain_json` makes ahead for a list's items (bytes).
const PLAIN_RESERVE: usize = 32 << 20;

/// `value` as `view/_text.py` `to_json_bytes(value, indent=indent)` writes it (orjson's
/// bytes, then the command line's escapes: `value.rs`'s layout and strings), or `None` when
/// it holds anything but exact `dict`s with `str` keys, `list`s, `tuple`s, `str`s,
/// `bool`s, `None`, integers within 63 bits and floats of the plain range, nests past
/// 100 levels, holds a lone surrogate or more than `nodes` values: those are orjson's or
/// `json`'s.
#[pyfunction]
fn plain_json<'py>(
    value: &Bound<'py, PyAny>,
    indent: bool,
    nodes: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mut left = nodes;
    let mut out = Vec::new();
    if !write_plain(value, indent, 0, &mut left, &mut out)? {
        return Ok(None);
    }
    Ok(Some(PyBytes::new(value.py(), &out)))
}

/// `obj` written to `out` as `value::write_json` writes the value it stands for, each
/// piece as it is met (no `Value` is built: a 20,000-line report took ~29 ms through
/// one, orjson ~4 ms after its ~11 ms import); `false` (what was written is to be
/// dropped) for anything `plain_json` declines.
fn write_plain(
    obj: &Bound<'_, PyAny>,
    indent: bool,
    depth: usize,
    left: &mut usize,
    out: &mut Vec<u8>,
) -> PyResult<bool> {
    use crate::value::{close, colon, json_string, member, write_float, write_int};
    use pyo3::types::{PyBool, PyFloat, PyInt};
    if depth > PLAIN_DEPTH || *left == 0 {
        return Ok(false);
    }
    *left -= 1;
    if obj.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = obj.cast_exact::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if let Ok(s) = obj.cast_exact::<PyString>() {
        let Ok(text) = s.to_str() else {
            return Ok(false); // a lone surrogate
        };
        json_string(out, text);
    } else if obj.is_exact_instance_of::<PyInt>() {
        match obj.extract::<i64>() {
            Ok(i) if i != i64::MIN => write_int(i, out),
            _ => return Ok(false),
        }
    } else if let Ok(f) = obj.cast_exact::<PyFloat>() {
        if write_float(f.value(), out).is_none() {
            return Ok(false);
        }
    } else if let Ok(d) = obj.cast_exact::<PyDict>() {
        out.push(b'{');
        for (k, (key, x)) in d.iter().enumerate() {
            let Ok(key) = key.cast_exact::<PyString>() else {
                return Ok(false);
            };
            let Ok(key) = key.to_str() else {
                return Ok(false);
            };
            member(out, k, indent, depth);
            json_string(out, key);
            colon(out, indent);
            if !write_plain(&x, indent, depth + 1, left, out)? {
                return Ok(false);
            }
        }
        close(out, indent, depth, b'}', d.len());
    } else if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() {
        let n = obj.len()?;
        out.push(b'[');
        let start = out.len();
        let before = *left;
        for (k, x) in obj.try_iter()?.enumerate() {
            member(out, k, indent, depth);
            if !write_plain(&x?, indent, depth + 1, left, out)? {
                return Ok(false);
            }
            // A list of values like its first (a report's lines, a page of hits) that
            // cannot fit is given up at once, not after writing what fits; one that
            // can has room made for the rest at once, up to 32 MiB (growing by
            // doubling copied each byte of a large report about twice; a first item
            // larger than the rest must not claim their room many times over).
            if k == 0 {
                if (before - *left).saturating_mul(n) > before {
                    return Ok(false);
                }
                out.reserve(((out.len() - start).saturating_mul(n - 1)).min(PLAIN_RESERVE));
            }
        }
        close(out, indent, depth, b']', n);
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// `escape::safe_block`: `text` with the escaping rule's block mode applied
/// (`view/_escape.py`), `text` itself when nothing changes. A string holding a lone
/// surrogate (which has no UTF-8) is read as `encode("utf-8", "surrogatepass")` writes it.
#[pyfunction]
fn safe_block<'py>(text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    let raw = id_from_py(text.as_any())?.unwrap_or_default();
    Ok(match crate::safe_block(&raw) {
        None => text.clone(),
        Some(out) => PyString::new(text.py(), &out),
    })
}

/// `escape::html_escape`: `html.escape(text, quote=True)`, `text` itself when it holds
/// none of the five characters. A lone surrogate is kept (read and written back as
/// `surrogatepass` does).
#[pyfunction]
fn html_escape<'py>(text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    let raw = id_from_py(text.as_any())?.unwrap_or_default();
    Ok(match crate::html_escape(&raw) {
        None => text.clone(),
        Some(out) => id_to_py(text.py(), &out)?.cast_into::<PyString>()?,
    })
}

/// `markdown::markdown_html`: message text (Markdown) as the HTML export shows it.
#[pyfunction]
fn markdown_html(py: Python<'_>, text: &str) -> String {
    py.detach(|| crate::markdown_html(text))
}

/// `section::markdown_section` of each of `lines` (an entry's JSON text, the index's
/// `ids` and current `labels` beside it): what the Markdown export writes for it as UTF-8 (empty
/// when `detail` leaves it out), `None` where the Python path must render it (an id or
/// label holding a lone surrogate too).
#[pyfunction]
fn markdown_sections(
    lines: Vec<Bound<'_, PyBytes>>,
    ids: Vec<Bound<'_, PyAny>>,
    labels: Vec<Option<Bound<'_, PyAny>>>,
    detail: &str,
) -> PyResult<Vec<Option<Py<PyBytes>>>> {
    let Some(detail) = crate::Detail::from_name(detail) else {
        return Err(PyValueError::new_err(format!("unknown detail {detail:?}")));
    };
    if ids.len() != lines.len() || labels.len() != lines.len() {
        return Err(PyValueError::new_err(
            "lines, ids and labels differ in length",
        ));
    }
    let mut out = Vec::with_capacity(lines.len());
    for ((line, id), label) in lines.iter().zip(&ids).zip(&labels) {
        let text = entry_texts(id, label.as_ref()).and_then(|(id, label)| {
            crate::markdown_section(line.as_bytes(), &id, label.as_deref(), detail)
        });
        out.push(text.map(|t| PyBytes::new(line.py(), t.as_bytes()).unbind()));
    }
    Ok(out)
}

/// `section::html_article` of each of `lines` (the index's `ids`, current `labels`,
/// entry numbers `nums` and `outs` beside them; `shown` for all; `kinds` the view's
/// `KINDS`): what the HTML export writes for the entry (UTF-8), `None` where the Python path
/// must render it (an id or label holding a lone surrogate too).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn html_articles(
    lines: Vec<Bound<'_, PyBytes>>,
    ids: Vec<Bound<'_, PyAny>>,
    labels: Vec<Option<Bound<'_, PyAny>>>,
    nums: Vec<i64>,
    shown: bool,
    outs: Vec<bool>,
    kinds: Vec<String>,
) -> PyResult<Vec<Option<Py<PyBytes>>>> {
    let n = lines.len();
    if ids.len() != n || labels.len() != n || nums.len() != n || outs.len() != n {
        return Err(PyValueError::new_err(
            "lines, ids, labels, nums and outs differ in length",
        ));
    }
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    let mut out = Vec::with_capacity(n);
    for (k, line) in lines.iter().enumerate() {
        let text = entry_texts(&ids[k], labels[k].as_ref()).and_then(|(id, label)| {
            crate::html_article(
                line.as_bytes(),
                &id,
                label.as_deref(),
                nums[k],
                shown,
                outs[k],
                &kinds,
            )
        });
        out.push(text.map(|t| PyBytes::new(line.py(), t.as_bytes()).unbind()));
    }
    Ok(out)
}

/// An entry's id and label as `str`s the core reads (`None`: one holds a lone surrogate,
/// or is not a `str`: the Python path's).
fn entry_texts(
    id: &Bound<'_, PyAny>,
    label: Option<&Bound<'_, PyAny>>,
) -> Option<(String, Option<String>)> {
    let text = |o: &Bound<'_, PyAny>| -> Option<String> {
        o.cast::<PyString>().ok()?.to_str().ok().map(str::to_owned)
    };
    let label = match label {
        None => None,
        Some(l) => Some(text(l)?),
    };
    Some((text(id)?, label))
}

/// `listing::entries_path`: the current path of a session's entries record.
#[pyfunction]
fn entries_path(entries: &Bound<'_, PyBytes>) -> Vec<u32> {
    crate::entries_path(entries.as_bytes())
}

/// Which entries of a file lie on its current path: a catalog `entries` record (the
/// path's entry numbers) as one flag per entry number, for the usage reports.
fn on_path_mask(entries: &[u8]) -> Vec<bool> {
    let path = crate::entries_path(entries);
    let mut on = vec![false; path.iter().max().map_or(0, |&m| m as usize + 1)];
    for s in path {
        on[s as usize] = true;
    }
    on
}

#[pymodule(gil_used = false)]
mod _sessiontree {
    #[pymodule_export]
    use super::birth_ns;
    #[pymodule_export]
    use super::count_newlines;
    #[pymodule_export]
    use super::entries_path;
    #[pymodule_export]
    use super::folder_files;
    #[pymodule_export]
    use super::html_articles;
    #[pymodule_export]
    use super::html_escape;
    #[pymodule_export]
    use super::index_build;
    #[pymodule_export]
    use super::index_merge;
    #[pymodule_export]
    use super::index_snippets;
    #[pymodule_export]
    use super::json_unsafe;
    #[pymodule_export]
    use super::judge_text;
    #[pymodule_export]
    use super::markdown_html;
    #[pymodule_export]
    use super::markdown_sections;
    #[pymodule_export]
    use super::number_column;
    #[pymodule_export]
    use super::plain_columns;
    #[pymodule_export]
    use super::plain_json;
    #[pymodule_export]
    use super::safe_block;
    #[pymodule_export]
    use super::scan_listing;
    #[pymodule_export]
    use super::search_files;
    #[pymodule_export]
    use super::search_tables;
    #[pymodule_export]
    use super::segment_pieces;
    #[pymodule_export]
    use super::stat_unchanged;
    #[pymodule_export]
    use super::usage_report;
    #[pymodule_export]
    use super::usage_sums;
    #[pymodule_export]
    use super::walk_folders;
    #[pymodule_export]
    use super::HitKeys;
    #[pymodule_export]
    use super::HitsJson;
    #[pymodule_export]
    use super::PyIndex;
    #[pymodule_export]
    use super::SearchScan;
    #[pymodule_export]
    use super::UsageScan;
    use pyo3::prelude::*;

    /// The core's tables, for `tests/test_tables.py` to hold equal to Python's.
    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        use crate::IssueKind;
        use pyo3::types::PyTuple;
        let py = m.py();
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("ENTRY_TYPES", PyTuple::new(py, crate::ENTRY_TYPES)?)?;
        m.add("ROLES", PyTuple::new(py, crate::Role::NAMES)?)?;
        let keys = crate::TOKEN_KEYS.map(|k| String::from_utf8_lossy(k).into_owned());
        m.add("TOKEN_KEYS", PyTuple::new(py, keys)?)?;
        let kinds = IssueKind::ALL.map(IssueKind::as_str);
        m.add("ISSUE_KINDS", PyTuple::new(py, kinds)?)?;
        m.add("MAX_DEPTH", crate::MAX_DEPTH)?;
        m.add("MAX_INT_DIGITS", crate::MAX_INT_DIGITS)?;
        m.add("MAX_TORN_CANDIDATES", crate::MAX_TORN_CANDIDATES)?;
        m.add("FINGERPRINT", crate::FINGERPRINT)?;
        let whole = crate::CLIP_WHOLE_KEYS.map(|k| String::from_utf8_lossy(k).into_owned());
        m.add("CLIP_WHOLE_KEYS", PyTuple::new(py, whole)?)?;
        use crate::rows;
        let limits = [
            rows::MAX_TEXT,
            rows::MAX_RESULT,
            rows::MAX_ARGUMENTS,
            rows::MAX_FIELD,
        ];
        m.add("TABLE_LIMITS", PyTuple::new(py, limits)?)
    }
}
