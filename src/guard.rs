//! SIGBUS while a memory map of a session file is scanned: the fault is turned into a
//! flag the scan checks, never a signal that kills the process.
//!
//! A map of a file that another process truncates faults (SIGBUS) on every page past
//! the new end, and no check before the access can close the window. Copying the file
//! with `pread` instead has no such window, but on the machines measured it doubled
//! the CPU time of an open (docs/BENCHMARKS.md, "Reading the file"). So the scan
//! reads a map, and while it does, a process-wide SIGBUS handler is installed: a fault
//! inside a registered range gets an anonymous zero page mapped over the faulting
//! page (the access then completes and reads zeros) and marks the range; after the
//! scan the caller sees the mark and reports the file as stale. A fault anywhere else
//! goes to the handler that was installed before, and then kills the process the
//! default way, as it would have without this module.
//!
//! The handler is installed when the first guarded scan starts and the previous one
//! put back when the last ends (unless someone installed another since). It uses only
//! atomics, `mmap` and `sigaction`, system calls that are safe in a signal handler
//! on Linux.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Ranges that can be guarded at once (more concurrent scans fall back to `pread`).
const SLOTS: usize = 64;

#[allow(clippy::declare_interior_mutable_const)]
const FREE: AtomicUsize = AtomicUsize::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const CLEAR: AtomicBool = AtomicBool::new(false);
static STARTS: [AtomicUsize; SLOTS] = [FREE; SLOTS];
static ENDS: [AtomicUsize; SLOTS] = [FREE; SLOTS];
static FAULTED: [AtomicBool; SLOTS] = [CLEAR; SLOTS];
/// The handler found when ours was installed (leaked; read by the handler).
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
/// Guarded scans running (installs and restores happen under this lock).
static ACTIVE: Mutex<usize> = Mutex::new(0);

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code > 0 {
        for i in 0..SLOTS {
            let (s, e) = (
                STARTS[i].load(Ordering::Acquire),
                ENDS[i].load(Ordering::Acquire),
            );
            if s <= addr && addr < e {
                let page = addr & !(page_size() - 1);
                // SAFETY: the page lies inside a map this process owns for the duration
                // of the scan; replacing it with a private zero page only changes what
                // the scan reads there.
                let p = unsafe {
                    libc::mmap(
                        page as *mut libc::c_void,
                        page_size(),
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if p != libc::MAP_FAILED {
                    FAULTED[i].store(true, Ordering::Release);
                    return;
                }
            }
        }
    }
    // Not ours: the handler from before, then the default action.
    let prev = PREVIOUS.load(Ordering::Acquire);
    if !prev.is_null() {
        // SAFETY: `prev` was filled by sigaction and is never freed.
        let pa = unsafe { &*prev };
        let h = pa.sa_sigaction;
        if h != libc::SIG_DFL && h != libc::SIG_IGN {
            // SAFETY: a handler installed with sigaction has one of these two shapes.
            unsafe {
                if pa.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(h);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
                    f(sig);
                }
            }
        }
    }
    // SAFETY: plain sigaction / raise calls.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
        if code <= 0 {
            libc::raise(sig);
        }
    }
}

fn handler_ptr() -> libc::sighandler_t {
    on_sigbus as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
        as libc::sighandler_t
}

/// A guarded range: faults inside it while this lives are recorded, not fatal.
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Guard `[start, start + len)` of this process's memory (a map being scanned);
    /// `None` when no slot is free or the handler cannot be installed.
    pub(crate) fn new(start: *const u8, len: usize) -> Option<Guard> {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        let slot = (0..SLOTS).find(|&i| ENDS[i].load(Ordering::Acquire) == 0)?;
        if *active == 0 {
            // SAFETY: installing a handler with a valid sigaction struct.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = handler_ptr();
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut act.sa_mask);
                if libc::sigaction(libc::SIGBUS, &act, &mut old) != 0 {
                    return None;
                }
                let kept = PREVIOUS.load(Ordering::Acquire);
                let same = !kept.is_null()
                    && (*kept).sa_sigaction == old.sa_sigaction
                    && (*kept).sa_flags == old.sa_flags;
                if old.sa_sigaction != handler_ptr() && !same {
                    let prev = Box::into_raw(Box::new(old));
                    let was = PREVIOUS.swap(prev, Ordering::AcqRel);
                    // The old copy may still be read by a handler on another thread:
                    // it is leaked, one struct per change of the handler found (a
                    // listing installs once per file, and the handler it finds is
                    // the same each time).
                    let _ = was;
                }
            }
        }
        *active += 1;
        FAULTED[slot].store(false, Ordering::Release);
        STARTS[slot].store(start as usize, Ordering::Release);
        ENDS[slot].store(start as usize + len, Ordering::Release);
        Some(Guard { slot })
    }

    /// A page of the range faulted (the file shrank under the map).
    pub(crate) fn faulted(&self) -> bool {
        FAULTED[self.slot].load(Ordering::Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        ENDS[self.slot].store(0, Ordering::Release);
        STARTS[self.slot].store(0, Ordering::Release);
        *active -= 1;
        if *active == 0 {
            let prev = PREVIOUS.load(Ordering::Acquire);
            // SAFETY: querying and restoring handlers with valid structs.
            unsafe {
                let mut cur: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut cur);
                if cur.sa_sigaction == handler_ptr() && !prev.is_null() {
                    libc::sigaction(libc::SIGBUS, prev, std::ptr::null_mut());
                }
            }
        }
    }
}
