//! Stage 1 of the validator: string bodies a 64-byte window at a time.
//!
//! A window's bytes are classified into bitmasks (bit k = byte k): `"`, `\`, bytes
//! < 0x20 and the one-letter escape letters, with AVX2 when the CPU has it, SSE2
//! otherwise on x86_64 (always present there) and a SWAR fallback elsewhere;
//! [`classify_scalar`] is the reference the others are tested against. The
//! odd-backslash-sequence trick (simdjson's `json_escape_scanner`) turns the backslash
//! mask into the mask of *escaped* bytes, carrying across windows, so the closing quote
//! of a string is the first quote that is not escaped: no byte of a body is visited
//! one at a time, only its escapes are (to check the letter after `\` and the four
//! hex digits of `\u`).
//!
//! No in-string (prefix-XOR) mask is needed: the state machine always knows where a
//! string opens, and the bytes it accepts between strings never contain `\`, so the
//! escape carry computed from a window's start is exact for every string that opens
//! inside that window. A window is therefore kept and reused by the next strings of
//! the line (a Pi line has a quote every ~18 bytes), and a fresh window starts at the
//! byte after an opening quote with carry 0 (the quote escapes nothing).

/// Bytes per window.
pub const BLOCK: usize = 64;

/// Byte classes of one window: bit k describes byte k.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Classes {
    /// `"`.
    pub quote: u64,
    /// `\`.
    pub backslash: u64,
    /// Bytes below 0x20 (raw control characters: invalid inside a string).
    pub ctl: u64,
    /// Letters of the one-character escapes: one of `"\/bfnrt` (`u` is not here).
    pub esc_ok: u64,
}

/// The one-character escape letters.
const SIMPLE: [u8; 8] = *b"\"\\/bfnrt";

/// The reference classifier: one byte at a time.
#[cfg(test)]
pub fn classify_scalar(b: &[u8; BLOCK]) -> Classes {
    let mut c = Classes::default();
    for (k, &x) in b.iter().enumerate() {
        c.quote |= u64::from(x == b'"') << k;
        c.backslash |= u64::from(x == b'\\') << k;
        c.ctl |= u64::from(x < 0x20) << k;
        c.esc_ok |= u64::from(SIMPLE.contains(&x)) << k;
    }
    c
}

#[cfg(any(test, not(target_arch = "x86_64")))]
const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
#[cfg(any(test, not(target_arch = "x86_64")))]
const HI: u64 = 0x8080_8080_8080_8080;
#[cfg(any(test, not(target_arch = "x86_64")))]
const ONES: u64 = 0x0101_0101_0101_0101;

#[cfg(any(test, not(target_arch = "x86_64")))]
/// High bit of each lane set exactly where the lane is zero (no cross-lane carries:
/// `(b & 0x7f) + 0x7f` never leaves the lane).
#[inline(always)]
fn zero_lanes(x: u64) -> u64 {
    !(((x & LO7) + LO7) | x | LO7)
}

#[cfg(any(test, not(target_arch = "x86_64")))]
/// The 8 lane high bits of `m` (bits 7, 15, .., 63) packed into bits 0..8.
#[inline(always)]
fn gather(m: u64) -> u64 {
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

#[cfg(any(test, not(target_arch = "x86_64")))]
/// Portable classifier: eight 8-byte words with exact per-lane masks.
pub fn classify_swar(b: &[u8; BLOCK]) -> Classes {
    let mut c = Classes::default();
    for (k, w) in b.chunks_exact(8).enumerate() {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_le_bytes(a);
        let q = zero_lanes(x ^ (ONES * u64::from(b'"')));
        let s = zero_lanes(x ^ (ONES * u64::from(b'\\')));
        // b < 0x20 iff the high bit is clear and (b & 0x7f) + 0x60 stays below 0x80.
        let ctl = !(((x & LO7) + ONES * 0x60) | x) & HI;
        let ok = SIMPLE
            .iter()
            .fold(0, |m, &l| m | zero_lanes(x ^ (ONES * u64::from(l))));
        c.esc_ok |= gather(ok) << (8 * k);
        c.quote |= gather(q) << (8 * k);
        c.backslash |= gather(s) << (8 * k);
        c.ctl |= gather(ctl) << (8 * k);
    }
    c
}

/// SSE2 classifier (x86_64 baseline: no runtime detection needed).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn classify_sse2(b: &[u8; BLOCK]) -> Classes {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let mut c = Classes::default();
    for (k, lane) in b.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of the x86_64 baseline, so these intrinsics are always
        // available; `lane` is 16 bytes long and `_mm_loadu_si128` reads exactly 16
        // bytes from its start with no alignment requirement.
        let (q, s, ctl, ok) = unsafe {
            let x = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
            let eq = |l: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(l as i8));
            let (vq, vs) = (eq(b'"'), eq(b'\\'));
            // Unsigned max(b, 0x1f) == 0x1f iff b <= 0x1f.
            let lim = _mm_set1_epi8(0x1f);
            let ctl = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(x, lim), lim));
            let mut ok = _mm_or_si128(vq, vs);
            for &l in &SIMPLE[2..] {
                ok = _mm_or_si128(ok, eq(l));
            }
            (
                _mm_movemask_epi8(vq),
                _mm_movemask_epi8(vs),
                ctl,
                _mm_movemask_epi8(ok),
            )
        };
        // movemask fills the low 16 bits of an i32.
        c.quote |= u64::from(q as u16) << (16 * k);
        c.backslash |= u64::from(s as u16) << (16 * k);
        c.ctl |= u64::from(ctl as u16) << (16 * k);
        c.esc_ok |= u64::from(ok as u16) << (16 * k);
    }
    c
}

/// AVX2 classifier; the escape letters through a nibble lookup (`vpshufb`).
///
/// Not a `#[target_feature]` function: those cannot be `#[inline(always)]`, and the
/// validator grew too big for LLVM to inline one into it (every window was a call, at
/// 24 call sites). Inlined into `scan::validate_avx2`, which is compiled with AVX2,
/// the intrinsics inline as AVX2 code there.
///
/// # Safety
/// The CPU must support AVX2 (see [`Avx2::detect`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn classify_avx2(b: &[u8; BLOCK]) -> Classes {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8,
        _mm256_movemask_epi8, _mm256_set1_epi8, _mm256_setr_epi8, _mm256_setzero_si256,
        _mm256_shuffle_epi8, _mm256_srli_epi16,
    };
    // Escape letters by (low nibble, high nibble): a byte is one iff the two table
    // entries share a bit. High nibble 2 -> 1 (`"` `/`), 5 -> 2 (`\`), 6 -> 4 (`b f n`),
    // 7 -> 8 (`r t`).
    #[rustfmt::skip]
    let lo_tbl = _mm256_setr_epi8(
        0, 0, 13, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1,
        0, 0, 13, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1,
    );
    #[rustfmt::skip]
    let hi_tbl = _mm256_setr_epi8(
        0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0,
    );
    let nib = _mm256_set1_epi8(0x0f);
    let lim = _mm256_set1_epi8(0x1f);
    let mut c = Classes::default();
    for (k, lane) in b.chunks_exact(32).enumerate() {
        // SAFETY: the caller guarantees AVX2; `lane` is 32 bytes long and
        // `_mm256_loadu_si256` reads exactly 32 bytes from its start, unaligned.
        let x = unsafe { _mm256_loadu_si256(lane.as_ptr().cast::<__m256i>()) };
        let q = _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_set1_epi8(b'"' as i8)));
        let s = _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_set1_epi8(b'\\' as i8)));
        let ctl = _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(x, lim), lim));
        let lo = _mm256_shuffle_epi8(lo_tbl, _mm256_and_si256(x, nib));
        let hi = _mm256_shuffle_epi8(hi_tbl, _mm256_and_si256(_mm256_srli_epi16(x, 4), nib));
        let none = _mm256_cmpeq_epi8(_mm256_and_si256(lo, hi), _mm256_setzero_si256());
        let ok = !_mm256_movemask_epi8(none);
        c.quote |= u64::from(q as u32) << (32 * k);
        c.backslash |= u64::from(s as u32) << (32 * k);
        c.ctl |= u64::from(ctl as u32) << (32 * k);
        c.esc_ok |= u64::from(ok as u32) << (32 * k);
    }
    c
}

/// A way to classify windows; picked once per line.
pub trait Classify: Copy {
    /// The classes of one window.
    fn classify(self, b: &[u8; BLOCK]) -> Classes;
}

/// The baseline classifier of this target: SSE2 on x86_64, SWAR elsewhere.
#[derive(Clone, Copy)]
pub struct Baseline;

impl Classify for Baseline {
    #[inline(always)]
    fn classify(self, b: &[u8; BLOCK]) -> Classes {
        #[cfg(target_arch = "x86_64")]
        {
            classify_sse2(b)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            classify_swar(b)
        }
    }
}

/// The `"` and `\` masks of one window (bit k = byte k): all a string of a line the
/// validator accepted needs to be skipped again (its escapes and bytes are known good).
#[inline(always)]
pub fn quotes_backslashes(b: &[u8; BLOCK]) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        let (mut q, mut s) = (0u64, 0u64);
        for (k, lane) in b.chunks_exact(16).enumerate() {
            // SAFETY: SSE2 is part of the x86_64 baseline; `lane` is 16 bytes long and
            // `_mm_loadu_si128` reads exactly 16 bytes from its start, unaligned.
            let (lq, ls) = unsafe {
                let x = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
                (
                    _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8))),
                    _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8))),
                )
            };
            q |= u64::from(lq as u16) << (16 * k);
            s |= u64::from(ls as u16) << (16 * k);
        }
        (q, s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let c = classify_swar(b);
        (c.quote, c.backslash)
    }
}

/// One past the closing quote of a string whose body starts at `s[start]`, in a line
/// the validator accepted, and whether the body holds an escape; `None` if no closing
/// quote follows. Only quotes and backslashes are classified (the validator checked
/// the rest): about half the work of [`Strings::skip_string`]'s windows.
#[inline]
pub fn skip_valid_string(s: &[u8], start: usize) -> Option<(usize, bool)> {
    let (mut base, mut carry, mut any) = (start, 0u64, false);
    loop {
        let rest = s.get(base..).filter(|r| !r.is_empty())?;
        let (w, valid) = match rest
            .get(..BLOCK)
            .and_then(|w| <&[u8; BLOCK]>::try_from(w).ok())
        {
            Some(w) => (quotes_backslashes(w), u64::MAX),
            None => {
                let mut w = [b' '; BLOCK];
                w[..rest.len()].copy_from_slice(rest);
                (quotes_backslashes(&w), (1u64 << rest.len()) - 1)
            }
        };
        let (esc, next) = escaped(w.1, carry);
        let q = w.0 & !esc & valid;
        if q != 0 {
            let body = (q & q.wrapping_neg()) - 1;
            any |= (esc | w.1) & body != 0;
            return Some((base + q.trailing_zeros() as usize + 1, any));
        }
        any |= (esc | w.1) & valid != 0;
        base += BLOCK;
        carry = next;
    }
}

/// Proof that the CPU has AVX2: only [`Avx2::detect`] makes one.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// `Some` iff the CPU supports AVX2 (cached by std after the first call).
    #[inline]
    pub fn detect() -> Option<Avx2> {
        is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl Classify for Avx2 {
    #[inline(always)]
    fn classify(self, b: &[u8; BLOCK]) -> Classes {
        // SAFETY: an `Avx2` value exists only if `detect` saw AVX2 on this CPU.
        unsafe { classify_avx2(b) }
    }
}

const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// Bytes escaped by a backslash, given the window's backslash mask and `carry` (1 if
/// byte 0 is escaped by the previous window). Returns (escaped mask, carry for the
/// next window). simdjson's branch-free odd/even run trick: a run of backslashes
/// escapes the byte after it iff the run (after a carried escape) has odd length.
#[inline(always)]
pub fn escaped(backslash: u64, carry: u64) -> (u64, u64) {
    let potential = backslash & !carry;
    let maybe_escaped = potential << 1;
    let even_codes_and_odd = (maybe_escaped | ODD).wrapping_sub(potential);
    let escape_and_terminal = even_codes_and_odd ^ ODD;
    let escaped = escape_and_terminal ^ (backslash | carry);
    let escape = escape_and_terminal & backslash;
    (escaped, escape >> 63)
}

/// Reference for [`escaped`]: one byte at a time.
#[cfg(test)]
pub fn escaped_scalar(backslash: u64, carry: u64) -> (u64, u64) {
    let mut esc = carry == 1;
    let mut out = 0;
    for k in 0..64 {
        if esc {
            out |= 1 << k;
            esc = false;
        } else if backslash >> k & 1 == 1 {
            esc = true;
        }
    }
    (out, u64::from(esc))
}

/// How far ahead of a window being loaded the bytes are asked into the cache (a
/// window is loaded every 64 bytes or more, so one line ahead per window keeps up).
/// The hardware prefetcher of the 2-core KVM guest this was measured on left the
/// validator waiting on memory for ~40% of its time: `Index.open` of the dense 1 GiB
/// session 0.86 -> 0.65 s of CPU, the project's 0.47 -> 0.26 s (docs/BENCHMARKS.md,
/// "Reopening"). 1 KiB measured a little slower, 4 KiB the same.
const PREFETCH: usize = 2048;

/// Ask for the cache line `ahead` bytes past the start of `bytes` (which need not
/// reach that far): a hint, never a read.
#[inline(always)]
fn prefetch(bytes: &[u8], ahead: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline; a prefetch never faults and reads
    // nothing the program sees, whatever the address (`wrapping_add` keeps the pointer
    // arithmetic itself defined).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().wrapping_add(ahead).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, ahead);
}

/// String-body scanner: the masks of the current window of one line.
pub struct Strings<C: Classify> {
    /// The classifier.
    cls: C,
    /// First byte of the window; `usize::MAX` before the first load.
    base: usize,
    /// Unescaped `"`.
    quote: u64,
    /// Bytes < 0x20.
    ctl: u64,
    /// Escaped bytes (the letter after an escaping `\`).
    escaped: u64,
    /// Escaped bytes that are not a one-character escape letter (must be `\u`+4 hex).
    esc_odd: u64,
    /// Escape carry into the next window.
    carry: u64,
}

impl<C: Classify> Strings<C> {
    /// No window loaded yet.
    #[inline(always)]
    pub fn new(cls: C) -> Strings<C> {
        Strings {
            cls,
            base: usize::MAX,
            quote: 0,
            ctl: 0,
            escaped: 0,
            esc_odd: 0,
            carry: 0,
        }
    }

    /// Load the window at `base` of `s`; `None` if `base` is past the end. A partial
    /// last window is padded with spaces (no class) and its masks cut at the end.
    #[inline(always)]
    fn load(&mut self, s: &[u8], base: usize, carry: u64) -> Option<()> {
        let rest = s.get(base..)?;
        if rest.is_empty() {
            return None;
        }
        prefetch(rest, PREFETCH);
        let (c, valid) = match rest
            .get(..BLOCK)
            .and_then(|w| <&[u8; BLOCK]>::try_from(w).ok())
        {
            Some(w) => (self.cls.classify(w), u64::MAX),
            None => {
                let mut w = [b' '; BLOCK];
                w[..rest.len()].copy_from_slice(rest);
                (self.cls.classify(&w), (1u64 << rest.len()) - 1)
            }
        };
        let (esc, next) = escaped(c.backslash, carry);
        self.base = base;
        self.escaped = esc & valid;
        self.esc_odd = esc & valid & !c.esc_ok;
        self.quote = c.quote & !esc;
        self.ctl = c.ctl;
        self.carry = next;
        Some(())
    }

    /// Skip a string body that starts at `start` (the byte after the opening quote).
    /// Returns the index after the closing quote and whether the body has an escape,
    /// or `None` if the string is unterminated or invalid (a raw byte < 0x20, a `\`
    /// not followed by one of `"\/bfnrtu`, `\u` without four hex digits).
    ///
    /// Precondition for exactness (not for safety): every byte between the start of
    /// the current window and `start` that is outside a string is not `\` — true for
    /// any prefix the state machine accepted.
    #[inline(always)]
    pub fn skip_string(&mut self, s: &[u8], start: usize) -> Option<(usize, bool)> {
        if start < self.base || start - self.base >= BLOCK {
            // The opening quote at `start - 1` escapes nothing.
            self.load(s, start, 0)?;
        }
        let mut from = start - self.base;
        let mut any_escape = false;
        loop {
            let live = u64::MAX << from;
            let q = self.quote & live;
            // Bits of the body inside this window: from `from` up to the closing quote.
            let body = if q == 0 {
                live
            } else {
                live & ((q & q.wrapping_neg()) - 1)
            };
            if self.ctl & body != 0 {
                return None;
            }
            any_escape |= self.escaped & body != 0;
            let mut odd = self.esc_odd & body;
            // Rare: `\u` (or an invalid escape): four hex digits must follow.
            while odd != 0 {
                let p = self.base + odd.trailing_zeros() as usize;
                odd &= odd - 1;
                let hex = s.get(p + 1..p + 5)?;
                if s.get(p) != Some(&b'u') || !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
            }
            if q != 0 {
                return Some((self.base + q.trailing_zeros() as usize + 1, any_escape));
            }
            let (next, carry) = (self.base + BLOCK, self.carry);
            self.load(s, next, carry)?;
            from = 0;
        }
    }
}
