//! The one place that asks the CPU what it has. The answer is read once per process into
//! a cached word (as memchr does), and the hot paths branch on that word: which string
//! kernel skips long strings, whether the structural walker runs (only with AVX-512BW;
//! without it the descent walker is faster), and whether a whole chunk of work is
//! compiled a second time for AVX2+BMI ([`with_avx2_bmi`]).
#![allow(unsafe_code)] // target_feature entry points, each called after its features were detected

use super::SyntaxError;
#[cfg(target_arch = "x86_64")]
use super::kernel::{Avx2, Avx512, Sse2};
use super::kernel::{ExtraMasks, Kernel};
use super::string::decode_string_with;
use super::string::skip_string_with;
use super::structural::{skip_container_with, skip_object_tail_with};
use super::ws::WhiteSpace;
use crate::js::string::JsStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// Bits of the cached CPU word.
const KNOWN: u8 = 1;
const AVX2: u8 = 2;
const AVX512BW: u8 = 4;
/// AVX-512BW with BMI1/2 and POPCNT: the structural walker's build.
const AVX512_BMI: u8 = 8;
/// AVX2 with BMI1/2, LZCNT and POPCNT: [`with_avx2_bmi`]'s build.
const AVX2_BMI: u8 = 16;

static CPU: AtomicU8 = AtomicU8::new(0);

#[inline(always)]
fn cpu() -> u8 {
    let c = CPU.load(Ordering::Relaxed);
    if c != 0 { c } else { detect() }
}

#[cold]
fn detect() -> u8 {
    let mut c = KNOWN;
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        let bmi = has!("bmi1") && has!("bmi2") && has!("popcnt");
        if has!("avx2") {
            c |= AVX2;
            if bmi && has!("lzcnt") {
                c |= AVX2_BMI;
            }
        }
        if has!("avx512bw") {
            c |= AVX512BW;
            if bmi {
                c |= AVX512_BMI;
            }
        }
    }
    CPU.store(c, Ordering::Relaxed);
    c
}

/// Run `f` compiled for AVX2, BMI1/2, LZCNT and POPCNT when this CPU has them (an
/// `#[inline(always)]` walker called from `f` is then built a second time with them:
/// cheaper bit scans, wider vectors; 5-8% faster listing), else as it is. Called once
/// per chunk of work (an index chunk, a listed file), not per value.
#[inline(always)]
pub(crate) fn with_avx2_bmi<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if cpu() & AVX2_BMI != 0 {
        // SAFETY: every feature `run_avx2_bmi` is compiled for was detected.
        return unsafe { run_avx2_bmi(f) };
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn run_avx2_bmi<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Skip a string with the best kernel this CPU has (see [`super::string`]).
#[inline]
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    #[cfg(target_arch = "x86_64")]
    {
        let c = cpu();
        if c & AVX512BW != 0 {
            // SAFETY: the CPU supports AVX-512BW, all that `skip_string_avx512` requires.
            return unsafe { skip_string_avx512(b, i) };
        }
        if c & AVX2 != 0 {
            // SAFETY: the CPU supports AVX2, all that `skip_string_avx2` requires.
            return unsafe { skip_string_avx2(b, i) };
        }
        skip_string_with::<Sse2>(b, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        skip_string_with::<super::kernel::Swar>(b, i)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn skip_string_avx2(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    skip_string_with::<Avx2>(b, i)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
unsafe fn skip_string_avx512(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    skip_string_with::<Avx512>(b, i)
}

/// Decode the string whose opening quote is at `i` with the best kernel this CPU has (see
/// `decode_string_with` in [`super::string`]); returns it and the offset past the
/// closing quote.
#[inline]
pub(crate) fn decode_string(b: &[u8], i: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    #[cfg(target_arch = "x86_64")]
    {
        let c = cpu();
        if c & AVX512BW != 0 {
            // SAFETY: the CPU supports AVX-512BW, all that `decode_string_avx512` requires.
            return unsafe { decode_string_avx512(b, i) };
        }
        if c & AVX2 != 0 {
            // SAFETY: the CPU supports AVX2, all that `decode_string_avx2` requires.
            return unsafe { decode_string_avx2(b, i) };
        }
        decode_string_with::<Sse2>(b, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        decode_string_with::<super::kernel::Swar>(b, i)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn decode_string_avx2(b: &[u8], i: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    decode_string_with::<Avx2>(b, i)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
unsafe fn decode_string_avx512(b: &[u8], i: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    decode_string_with::<Avx512>(b, i)
}

/// Decode a string with kernel `isa` (one the CPU has: see [`kernels`]; others run SWAR).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn decode_string_kernel(isa: Isa, b: &[u8], i: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Sse2 => decode_string_with::<Sse2>(b, i),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 support was checked in the match guard.
        Isa::Avx2 if cpu() & AVX2 != 0 => unsafe { decode_string_avx2(b, i) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512BW support was checked in the match guard.
        Isa::Avx512 if cpu() & AVX512BW != 0 => unsafe { decode_string_avx512(b, i) },
        _ => decode_string_with::<super::kernel::Swar>(b, i),
    }
}

/// Skip the array or object at `i` with the structural walker ([`super::structural`]),
/// white space flavour `W`; `None` when it cannot vouch for the value, or when this CPU
/// lacks AVX-512BW (the walker is slower than the descent without it).
#[inline]
pub(crate) fn skip_container<W: WhiteSpace>(b: &[u8], i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if cpu() & AVX512_BMI != 0 {
        // SAFETY: every feature `skip_container_avx512` is compiled for was detected.
        return unsafe { skip_container_avx512::<W>(b, i) };
    }
    let _ = (b, i);
    None
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,bmi1,bmi2,popcnt")]
unsafe fn skip_container_avx512<W: WhiteSpace>(b: &[u8], i: usize) -> Option<usize> {
    skip_container_with::<Avx512, W>(b, i)
}

/// Skip the rest of an object from just after one of its member values, unless a later
/// member is named `deny` (see [`super::structural::skip_object_tail_with`]); `None` also
/// when this CPU lacks AVX-512BW, as for [`skip_container`].
#[inline]
pub(crate) fn skip_object_tail<W: WhiteSpace>(b: &[u8], i: usize, deny: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if cpu() & AVX512_BMI != 0 {
        // SAFETY: every feature `skip_object_tail_avx512` is compiled for was detected.
        return unsafe { skip_object_tail_avx512::<W>(b, i, deny) };
    }
    let _ = (b, i, deny);
    None
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,bmi1,bmi2,popcnt")]
unsafe fn skip_object_tail_avx512<W: WhiteSpace>(b: &[u8], i: usize, deny: &[u8]) -> Option<usize> {
    skip_object_tail_with::<Avx512, W>(b, i, deny)
}

/// [`skip_object_tail`] with kernel `isa` (the AVX-512 build when asked for and present,
/// the portable byte classes otherwise), for tests and fuzz targets.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn skip_object_tail_kernel<W: WhiteSpace>(isa: Isa, b: &[u8], i: usize, deny: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && cpu() & AVX512_BMI != 0 {
        // SAFETY: the features were detected just above.
        return unsafe { skip_object_tail_avx512::<W>(b, i, deny) };
    }
    let _ = isa;
    skip_object_tail_with::<super::kernel::Swar, W>(b, i, deny)
}

/// A mask kernel, named for tests, benchmarks and fuzz targets that run each one.
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Portable arithmetic on `u64` words (and byte-at-a-time structural classes).
    Swar,
    /// SSE2 (x86_64 baseline).
    Sse2,
    /// AVX2.
    Avx2,
    /// AVX-512BW (with BMI1/2 and POPCNT for the structural walker).
    Avx512,
}

/// Every kernel this CPU can run.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn kernels() -> Vec<Isa> {
    let c = cpu();
    let mut k = vec![Isa::Swar];
    if cfg!(target_arch = "x86_64") {
        k.push(Isa::Sse2);
    }
    if c & AVX2 != 0 {
        k.push(Isa::Avx2);
    }
    if c & AVX512BW != 0 {
        k.push(Isa::Avx512);
    }
    k
}

/// Skip a string with kernel `isa` (one the CPU has: see [`kernels`]; others run SWAR).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn skip_string_kernel(isa: Isa, b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Sse2 => skip_string_with::<Sse2>(b, i),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 support was checked in the match guard.
        Isa::Avx2 if cpu() & AVX2 != 0 => unsafe { skip_string_avx2(b, i) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512BW support was checked in the match guard.
        Isa::Avx512 if cpu() & AVX512BW != 0 => unsafe { skip_string_avx512(b, i) },
        _ => skip_string_with::<super::kernel::Swar>(b, i),
    }
}

/// The structural walker with white space `W`: the AVX-512 build for [`Isa::Avx512`]
/// when the CPU has it, the portable byte-at-a-time classes for anything else.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn skip_container_kernel<W: WhiteSpace>(isa: Isa, b: &[u8], i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && cpu() & AVX512_BMI != 0 {
        // SAFETY: the features were detected just above.
        return unsafe { skip_container_avx512::<W>(b, i) };
    }
    let _ = isa;
    skip_container_with::<super::kernel::Swar, W>(b, i)
}

/// A computation generic over the mask kernel, for [`with_kernel`]. Its `run` must be
/// `#[inline(always)]` (and so must what it calls with `K`), so that it is compiled inside
/// the `target_feature` entry point with that kernel's features.
pub(crate) trait KernelTask {
    /// What the computation gives.
    type Out;
    /// Run with kernel `K`.
    fn run<K: Kernel + ExtraMasks>(self) -> Self::Out;
}

/// Run `task` with the best mask kernel this CPU has (as [`skip_string`] chooses).
#[inline]
pub(crate) fn with_kernel<T: KernelTask>(task: T) -> T::Out {
    #[cfg(target_arch = "x86_64")]
    {
        let c = cpu();
        if c & AVX512BW != 0 {
            // SAFETY: the CPU supports AVX-512BW, all that `run_avx512` requires.
            return unsafe { run_avx512(task) };
        }
        if c & AVX2 != 0 {
            // SAFETY: the CPU supports AVX2, all that `run_avx2` requires.
            return unsafe { run_avx2(task) };
        }
        task.run::<Sse2>()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        task.run::<super::kernel::Swar>()
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<T: KernelTask>(task: T) -> T::Out {
    task.run::<Avx2>()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
unsafe fn run_avx512<T: KernelTask>(task: T) -> T::Out {
    task.run::<Avx512>()
}

/// Run `task` with kernel `isa` (one the CPU has: see [`kernels`]; others run SWAR).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn with_kernel_isa<T: KernelTask>(isa: Isa, task: T) -> T::Out {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Sse2 => task.run::<Sse2>(),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 support was checked in the match guard.
        Isa::Avx2 if cpu() & AVX2 != 0 => unsafe { run_avx2(task) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512BW support was checked in the match guard.
        Isa::Avx512 if cpu() & AVX512BW != 0 => unsafe { run_avx512(task) },
        _ => task.run::<super::kernel::Swar>(),
    }
}
