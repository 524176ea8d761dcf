//! CPU-specific mask kernels, with `string.rs`'s short-string look and `dispatch.rs`'s
//! `target_feature` entry points the crate's only CPU `unsafe`.
//!
//! A kernel turns a 64-byte block into bit masks (bit k = byte k): quotes, backslashes,
//! control bytes (< 0x20), the letter `u`, the letters that may follow a backslash, and
//! (for [`super::structural`]) structural characters and white space. Four kernels give
//! identical masks: AVX-512BW, AVX2, SSE2 (baseline on x86_64) and portable SWAR
//! arithmetic on `u64` words (every other target). Which one runs is decided once, in
//! [`super::dispatch`]; tests compare all of them on random blocks.
#![allow(unsafe_code)]

/// Masks of one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Masks {
    pub quote: u64,
    pub backslash: u64,
    pub ctrl: u64,
}

/// The byte classes of one block that the structural walker ([`super::structural`])
/// needs, besides [`Masks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Classes {
    /// `"`, `\\`, bytes < 0x20.
    pub masks: Masks,
    /// `{ } [ ] : ,`
    pub structural: u64,
    /// Space and tab.
    pub blank: u64,
    /// `\r`.
    pub cr: u64,
    /// `\n`.
    pub lf: u64,
}

/// A way to compute block masks.
pub(crate) trait Kernel {
    /// Quotes, backslashes, control bytes.
    fn masks(block: &[u8; 64]) -> Masks;
    /// (letters valid after a backslash: `" \\ / b f n r t u`, the letter `u`).
    fn letters(block: &[u8; 64]) -> (u64, u64);
    /// Every class the structural walker needs. The default looks at one byte at a time
    /// (the obvious twin of the vector versions).
    #[inline(always)]
    fn classes(block: &[u8; 64]) -> Classes {
        let mut c = Classes {
            masks: Masks {
                quote: 0,
                backslash: 0,
                ctrl: 0,
            },
            structural: 0,
            blank: 0,
            cr: 0,
            lf: 0,
        };
        for (k, &x) in block.iter().enumerate() {
            let bit = 1u64 << k;
            let set = |m: &mut u64, yes: bool| {
                if yes {
                    *m |= bit
                }
            };
            set(&mut c.masks.quote, x == b'"');
            set(&mut c.masks.backslash, x == b'\\');
            set(&mut c.masks.ctrl, x < 0x20);
            set(&mut c.structural, matches!(x, b'{' | b'}' | b'[' | b']' | b':' | b','));
            set(&mut c.blank, matches!(x, b' ' | b'\t'));
            set(&mut c.cr, x == b'\r');
            set(&mut c.lf, x == b'\n');
        }
        c
    }
}

/// Portable SWAR kernel (the fallback off x86_64; on x86_64 only tests, benches and fuzz
/// targets use it, through `internals`).
#[cfg_attr(all(target_arch = "x86_64", not(any(test, feature = "internals"))), allow(dead_code))]
pub(crate) struct Swar;

#[cfg_attr(all(target_arch = "x86_64", not(any(test, feature = "internals"))), allow(dead_code))]
const ONES: u64 = 0x0101_0101_0101_0101;
#[cfg_attr(all(target_arch = "x86_64", not(any(test, feature = "internals"))), allow(dead_code))]
const LOWS: u64 = 0x7F7F_7F7F_7F7F_7F7F;

#[cfg_attr(all(target_arch = "x86_64", not(any(test, feature = "internals"))), allow(dead_code))]
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOWS) + LOWS) | x | LOWS)
}

#[cfg_attr(all(target_arch = "x86_64", not(any(test, feature = "internals"))), allow(dead_code))]
#[inline(always)]
fn movemask(hi: u64) -> u64 {
    ((hi >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

#[cfg_attr(all(target_arch = "x86_64", not(any(test, feature = "internals"))), allow(dead_code))]
#[inline(always)]
fn words(block: &[u8; 64]) -> [u64; 8] {
    std::array::from_fn(|k| u64::from_le_bytes(block[k * 8..k * 8 + 8].try_into().expect("8 bytes")))
}

impl Kernel for Swar {
    #[inline(always)]
    fn masks(block: &[u8; 64]) -> Masks {
        let mut m = Masks {
            quote: 0,
            backslash: 0,
            ctrl: 0,
        };
        for (k, w) in words(block).into_iter().enumerate() {
            m.quote |= movemask(zero_bytes(w ^ (ONES * b'"' as u64))) << (k * 8);
            m.backslash |= movemask(zero_bytes(w ^ (ONES * b'\\' as u64))) << (k * 8);
            m.ctrl |= movemask(zero_bytes(w & (ONES * 0xE0))) << (k * 8);
        }
        m
    }
    #[inline(always)]
    fn letters(block: &[u8; 64]) -> (u64, u64) {
        let mut valid = 0u64;
        let mut u = 0u64;
        for (i, &c) in block.iter().enumerate() {
            valid |= u64::from(matches!(
                c,
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u'
            )) << i;
            u |= u64::from(c == b'u') << i;
        }
        (valid, u)
    }
}

/// Two more masks, for the verbatim test (`verbatim.rs`): it must notice non-ASCII text
/// to validate it as UTF-8, and escapes of `/` (valid, but never written by stringify).
pub(crate) trait ExtraMasks {
    /// Bytes >= 0x80 (UTF-8 lead and continuation bytes).
    fn high(block: &[u8; 64]) -> u64;
    /// Bytes equal to `c`.
    fn byte(block: &[u8; 64], c: u8) -> u64;
}

impl ExtraMasks for Swar {
    #[inline(always)]
    fn high(block: &[u8; 64]) -> u64 {
        let mut m = 0u64;
        for (k, w) in words(block).into_iter().enumerate() {
            m |= movemask(w & (ONES * 0x80)) << (k * 8);
        }
        m
    }
    #[inline(always)]
    fn byte(block: &[u8; 64], c: u8) -> u64 {
        let mut m = 0u64;
        for (k, w) in words(block).into_iter().enumerate() {
            m |= movemask(zero_bytes(w ^ (ONES * c as u64))) << (k * 8);
        }
        m
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Kernel, Masks};
    use std::arch::x86_64::*;

    /// SSE2 kernel (always available on x86_64).
    pub(crate) struct Sse2;
    /// AVX2 kernel (only call through a `#[target_feature(enable = "avx2")]` function after
    /// checking `is_x86_feature_detected!("avx2")`).
    pub(crate) struct Avx2;

    #[inline(always)]
    fn eq16(v: __m128i, c: u8) -> u64 {
        // SAFETY: SSE2 is part of the x86_64 baseline, so these intrinsics are always
        // available; they only read the register operands.
        unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8))) as u32 as u64 }
    }

    #[inline(always)]
    fn load16(block: &[u8; 64], k: usize) -> __m128i {
        debug_assert!(k < 4);
        // SAFETY: k < 4, so bytes k*16 .. k*16+16 lie inside the 64-byte array; the load is
        // unaligned (loadu), and SSE2 is baseline on x86_64.
        unsafe { _mm_loadu_si128(block.as_ptr().add(k * 16).cast()) }
    }

    /// A vector register of `WIDTH` bytes, as far as [`masks_with`] needs one (memchr's
    /// `Vector` idea): the quote/backslash/control masks are written once for SSE2 and AVX2.
    trait Lanes: Copy {
        const WIDTH: usize;
        /// Bytes `k * WIDTH ..` of the block.
        fn load(block: &[u8; 64], k: usize) -> Self;
        /// Lanes equal to `c`, as bits.
        fn eq(self, c: u8) -> u64;
        /// Lanes below 0x20, as bits.
        fn control(self) -> u64;
    }

    impl Lanes for __m128i {
        const WIDTH: usize = 16;
        #[inline(always)]
        fn load(block: &[u8; 64], k: usize) -> Self {
            load16(block, k)
        }
        #[inline(always)]
        fn eq(self, c: u8) -> u64 {
            eq16(self, c)
        }
        #[inline(always)]
        fn control(self) -> u64 {
            // SAFETY: SSE2 is baseline on x86_64; register operations only.
            unsafe {
                // x < 0x20  <=>  max(x, 0x1f) == 0x1f (unsigned)
                let f = _mm_set1_epi8(0x1f);
                _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(self, f), f)) as u32 as u64
            }
        }
    }

    impl Lanes for __m256i {
        const WIDTH: usize = 32;
        #[inline(always)]
        fn load(block: &[u8; 64], k: usize) -> Self {
            load32(block, k)
        }
        #[inline(always)]
        fn eq(self, c: u8) -> u64 {
            eq32(self, c)
        }
        #[inline(always)]
        fn control(self) -> u64 {
            // SAFETY: as in `eq32`: only reached inside AVX2 code after detection.
            unsafe {
                let f = _mm256_set1_epi8(0x1f);
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(self, f), f)) as u32 as u64
            }
        }
    }

    /// Quotes, backslashes and control bytes of a block, `64 / V::WIDTH` registers at a time.
    #[inline(always)]
    fn masks_with<V: Lanes>(block: &[u8; 64]) -> Masks {
        let mut m = Masks {
            quote: 0,
            backslash: 0,
            ctrl: 0,
        };
        for k in 0..64 / V::WIDTH {
            let v = V::load(block, k);
            let at = k * V::WIDTH;
            m.quote |= v.eq(b'"') << at;
            m.backslash |= v.eq(b'\\') << at;
            m.ctrl |= v.control() << at;
        }
        m
    }

    impl Kernel for Sse2 {
        #[inline(always)]
        fn masks(block: &[u8; 64]) -> Masks {
            masks_with::<__m128i>(block)
        }
        #[inline(always)]
        fn letters(block: &[u8; 64]) -> (u64, u64) {
            let mut valid = 0u64;
            let mut u = 0u64;
            for k in 0..4 {
                let v = load16(block, k);
                let uu = eq16(v, b'u');
                let mut ok = uu;
                for c in [b'"', b'\\', b'/', b'b', b'f', b'n', b'r', b't'] {
                    ok |= eq16(v, c);
                }
                valid |= ok << (k * 16);
                u |= uu << (k * 16);
            }
            (valid, u)
        }
    }

    /// The letters valid after a backslash (`" \\ / b f n r t u`), classified by nibble
    /// lookups: a byte is one iff `ESCAPE_LO[low nibble] & ESCAPE_HI[high nibble] != 0`.
    /// Each high nibble that holds letters gets a bit (2: `"` `/`; 5: `\\`; 6: `b f n`;
    /// 7: `r t u`), set in the low-nibble entries of exactly its letters; bytes from 0x80
    /// have no bit. Two shuffles instead of nine compares.
    const ESCAPE_LO: [u8; 16] = {
        let mut t = [0u8; 16];
        t[0x2] = 0b1101; // " (2), b (6), r (7)
        t[0xF] = 0b0001; // /
        t[0xC] = 0b0010; // backslash
        t[0x6] = 0b0100; // f
        t[0xE] = 0b0100; // n
        t[0x4] = 0b1000; // t
        t[0x5] = 0b1000; // u
        t
    };
    const ESCAPE_HI: [u8; 16] = {
        let mut t = [0u8; 16];
        t[0x2] = 0b0001;
        t[0x5] = 0b0010;
        t[0x6] = 0b0100;
        t[0x7] = 0b1000;
        t
    };

    #[inline(always)]
    fn load32(block: &[u8; 64], k: usize) -> __m256i {
        debug_assert!(k < 2);
        // SAFETY: k < 2, so bytes k*32 .. k*32+32 lie inside the 64-byte array (unaligned
        // load). Callers run inside a function compiled with AVX2 enabled, entered only
        // after `is_x86_feature_detected!("avx2")` returned true.
        unsafe { _mm256_loadu_si256(block.as_ptr().add(k * 32).cast()) }
    }

    #[inline(always)]
    fn eq32(v: __m256i, c: u8) -> u64 {
        // SAFETY: AVX2 was detected before entering the AVX2 code path (see `load32`);
        // register operations only.
        unsafe { _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8))) as u32 as u64 }
    }

    impl Kernel for Avx2 {
        #[inline(always)]
        fn masks(block: &[u8; 64]) -> Masks {
            masks_with::<__m256i>(block)
        }
        #[inline(always)]
        fn letters(block: &[u8; 64]) -> (u64, u64) {
            let mut valid = 0u64;
            let mut u = 0u64;
            for k in 0..2 {
                let v = load32(block, k);
                // SAFETY: as in `eq32`.
                let ok = unsafe {
                    let lo_t = _mm256_broadcastsi128_si256(_mm_loadu_si128(ESCAPE_LO.as_ptr().cast()));
                    let hi_t = _mm256_broadcastsi128_si256(_mm_loadu_si128(ESCAPE_HI.as_ptr().cast()));
                    let nib = _mm256_set1_epi8(0x0f);
                    let lo = _mm256_shuffle_epi8(lo_t, _mm256_and_si256(v, nib));
                    let hi = _mm256_shuffle_epi8(hi_t, _mm256_and_si256(_mm256_srli_epi16::<4>(v), nib));
                    let zero = _mm256_cmpeq_epi8(_mm256_and_si256(lo, hi), _mm256_setzero_si256());
                    !(_mm256_movemask_epi8(zero) as u32) as u64
                };
                valid |= ok << (k * 32);
                u |= eq32(v, b'u') << (k * 32);
            }
            (valid, u)
        }
    }

    /// AVX-512 (BW) kernel: one 64-byte register per block, compares straight into mask
    /// registers. Only call through a `#[target_feature(enable = "avx512bw")]` function
    /// after checking `is_x86_feature_detected!("avx512bw")`.
    pub(crate) struct Avx512;

    #[inline(always)]
    fn load64(block: &[u8; 64]) -> __m512i {
        // SAFETY: the array is exactly 64 bytes (unaligned load). Callers run inside a
        // function compiled with AVX-512BW enabled, entered only after
        // `is_x86_feature_detected!("avx512bw")` returned true.
        unsafe { _mm512_loadu_si512(block.as_ptr().cast()) }
    }

    #[inline(always)]
    fn eq64(v: __m512i, c: u8) -> u64 {
        // SAFETY: AVX-512BW was detected before entering this code path (see `load64`);
        // register operations only.
        unsafe { _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(c as i8)) }
    }

    impl Kernel for Avx512 {
        #[inline(always)]
        fn masks(block: &[u8; 64]) -> Masks {
            let v = load64(block);
            Masks {
                quote: eq64(v, b'"'),
                backslash: eq64(v, b'\\'),
                // SAFETY: as in `eq64`.
                ctrl: unsafe { _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20)) },
            }
        }
        #[inline(always)]
        fn letters(block: &[u8; 64]) -> (u64, u64) {
            let v = load64(block);
            // SAFETY: as in `eq64`.
            let ok = unsafe {
                let lo_t = _mm512_broadcast_i32x4(_mm_loadu_si128(ESCAPE_LO.as_ptr().cast()));
                let hi_t = _mm512_broadcast_i32x4(_mm_loadu_si128(ESCAPE_HI.as_ptr().cast()));
                let nib = _mm512_set1_epi8(0x0f);
                let lo = _mm512_shuffle_epi8(lo_t, _mm512_and_si512(v, nib));
                let hi = _mm512_shuffle_epi8(hi_t, _mm512_and_si512(_mm512_srli_epi16::<4>(v), nib));
                _mm512_test_epi8_mask(lo, hi)
            };
            (ok, eq64(v, b'u'))
        }
        #[inline(always)]
        fn classes(block: &[u8; 64]) -> super::Classes {
            let v = load64(block);
            // SAFETY: as in `eq64`.
            let (ctrl, brackets) = unsafe {
                // `[` and `]` are `{` and `}` without bit 5.
                let folded = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
                (
                    _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20)),
                    _mm512_cmpeq_epi8_mask(folded, _mm512_set1_epi8(b'{' as i8))
                        | _mm512_cmpeq_epi8_mask(folded, _mm512_set1_epi8(b'}' as i8)),
                )
            };
            super::Classes {
                masks: Masks {
                    quote: eq64(v, b'"'),
                    backslash: eq64(v, b'\\'),
                    ctrl,
                },
                structural: brackets | eq64(v, b':') | eq64(v, b','),
                blank: eq64(v, b' ') | eq64(v, b'\t'),
                cr: eq64(v, b'\r'),
                lf: eq64(v, b'\n'),
            }
        }
    }

    impl super::ExtraMasks for Sse2 {
        #[inline(always)]
        fn high(block: &[u8; 64]) -> u64 {
            let mut m = 0u64;
            for k in 0..4 {
                // SAFETY: SSE2 is baseline on x86_64; register operations only.
                m |= (unsafe { _mm_movemask_epi8(load16(block, k)) } as u32 as u64) << (k * 16);
            }
            m
        }
        #[inline(always)]
        fn byte(block: &[u8; 64], c: u8) -> u64 {
            let mut m = 0u64;
            for k in 0..4 {
                m |= eq16(load16(block, k), c) << (k * 16);
            }
            m
        }
    }

    impl super::ExtraMasks for Avx2 {
        #[inline(always)]
        fn high(block: &[u8; 64]) -> u64 {
            let mut m = 0u64;
            for k in 0..2 {
                // SAFETY: as in `eq32`: only reached inside AVX2 code after detection.
                m |= (unsafe { _mm256_movemask_epi8(load32(block, k)) } as u32 as u64) << (k * 32);
            }
            m
        }
        #[inline(always)]
        fn byte(block: &[u8; 64], c: u8) -> u64 {
            eq32(load32(block, 0), c) | eq32(load32(block, 1), c) << 32
        }
    }

    impl super::ExtraMasks for Avx512 {
        #[inline(always)]
        fn high(block: &[u8; 64]) -> u64 {
            // SAFETY: as in `eq64`: only reached inside AVX-512BW code after detection.
            unsafe { _mm512_movepi8_mask(load64(block)) }
        }
        #[inline(always)]
        fn byte(block: &[u8; 64], c: u8) -> u64 {
            eq64(load64(block), c)
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512, Sse2};

/// The decoder's masks of one block ([`super::string`]'s `decode_string_with`): the
/// string masks and the bytes >= 0x80, which are the only ones UTF-8 validation needs to
/// look at. The non-ASCII mask is each byte's top bit (`movemask`), so it costs one
/// instruction per register on top of [`Kernel::masks`]; the loads are shared.
pub(crate) trait DecodeKernel: Kernel {
    /// [`Kernel::masks`] and the mask of bytes >= 0x80.
    fn decode_masks(block: &[u8; 64]) -> (Masks, u64);
}

impl DecodeKernel for Swar {
    #[inline(always)]
    fn decode_masks(block: &[u8; 64]) -> (Masks, u64) {
        let mut high = 0u64;
        for (k, w) in words(block).into_iter().enumerate() {
            high |= movemask(w & (ONES * 0x80)) << (k * 8);
        }
        (Swar::masks(block), high)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_decode {
    use super::x86::{Avx2, Avx512, Sse2};
    use super::{DecodeKernel, Kernel, Masks};
    use std::arch::x86_64::*;

    impl DecodeKernel for Sse2 {
        #[inline(always)]
        fn decode_masks(block: &[u8; 64]) -> (Masks, u64) {
            let mut high = 0u64;
            for k in 0..4 {
                // SAFETY: k < 4, so bytes k*16 .. k*16+16 lie inside the 64-byte array
                // (unaligned load); SSE2 is baseline on x86_64.
                let m = unsafe { _mm_movemask_epi8(_mm_loadu_si128(block.as_ptr().add(k * 16).cast())) };
                high |= u64::from(m as u16) << (k * 16);
            }
            (Sse2::masks(block), high)
        }
    }

    impl DecodeKernel for Avx2 {
        #[inline(always)]
        fn decode_masks(block: &[u8; 64]) -> (Masks, u64) {
            let mut high = 0u64;
            for k in 0..2 {
                // SAFETY: k < 2, so bytes k*32 .. k*32+32 lie inside the 64-byte array
                // (unaligned load). Only reached inside AVX2 code entered after
                // `is_x86_feature_detected!("avx2")` (see `Avx2`).
                let m = unsafe { _mm256_movemask_epi8(_mm256_loadu_si256(block.as_ptr().add(k * 32).cast())) };
                high |= u64::from(m as u32) << (k * 32);
            }
            (Avx2::masks(block), high)
        }
    }

    impl DecodeKernel for Avx512 {
        #[inline(always)]
        fn decode_masks(block: &[u8; 64]) -> (Masks, u64) {
            // SAFETY: the array is exactly 64 bytes (unaligned load). Only reached inside
            // AVX-512BW code entered after `is_x86_feature_detected!("avx512bw")` (see
            // `Avx512`).
            let high = unsafe { _mm512_movepi8_mask(_mm512_loadu_si512(block.as_ptr().cast())) };
            (Avx512::masks(block), high)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value in every lane first (the lookup tables), then 20,000 random
    /// blocks: a quarter of the bytes random, the rest drawn from `alphabet`.
    fn test_blocks(mut seed: u64, alphabet: &'static [u8]) -> impl Iterator<Item = [u8; 64]> {
        (0..256 + 20_000).map(move |round| {
            let mut block = [0u8; 64];
            if round < 256 {
                for (k, b) in block.iter_mut().enumerate() {
                    *b = (round as u8).wrapping_add((k % 4) as u8 * 64);
                }
                return block;
            }
            for b in block.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = if seed.is_multiple_of(4) {
                    seed as u8
                } else {
                    alphabet[(seed >> 8) as usize % alphabet.len()]
                };
            }
            block
        })
    }

    #[test]
    fn kernels_agree_on_random_blocks() {
        for block in test_blocks(0x9E37_79B9_7F4A_7C15, b"\"\\u/bfnrtxa\x00\x1f\x20\x7f\xff") {
            let s = (Swar::masks(&block), Swar::letters(&block));
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(s, (x86::Sse2::masks(&block), x86::Sse2::letters(&block)));
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 support was just checked.
                    let a = unsafe { avx2_masks(&block) };
                    assert_eq!(s, a);
                }
                if std::is_x86_feature_detected!("avx512bw") {
                    // SAFETY: AVX-512BW support was just checked.
                    let a = unsafe { avx512_masks(&block) };
                    assert_eq!(s, a);
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2_masks(block: &[u8; 64]) -> (Masks, (u64, u64)) {
        (x86::Avx2::masks(block), x86::Avx2::letters(block))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    unsafe fn avx512_masks(block: &[u8; 64]) -> (Masks, (u64, u64)) {
        (x86::Avx512::masks(block), x86::Avx512::letters(block))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    unsafe fn avx512_classes(block: &[u8; 64]) -> Classes {
        x86::Avx512::classes(block)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2_decode_masks(block: &[u8; 64]) -> (Masks, u64) {
        x86::Avx2::decode_masks(block)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    unsafe fn avx512_decode_masks(block: &[u8; 64]) -> (Masks, u64) {
        x86::Avx512::decode_masks(block)
    }

    #[test]
    fn decode_masks_agree_on_random_blocks() {
        for block in test_blocks(0x5DEE_CE66_D1CE_4E5B, b"\"\\\x00\x1f\x7f\x80\xbf\xc3\xe2\xf0\xffa") {
            let high = block
                .iter()
                .enumerate()
                .fold(0u64, |m, (k, &c)| m | (u64::from(c >= 0x80) << k));
            let want = (Swar::masks(&block), high);
            assert_eq!(Swar::decode_masks(&block), want);
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(x86::Sse2::decode_masks(&block), want);
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 support was just checked.
                    assert_eq!(unsafe { avx2_decode_masks(&block) }, want);
                }
                if std::is_x86_feature_detected!("avx512bw") {
                    // SAFETY: AVX-512BW support was just checked.
                    assert_eq!(unsafe { avx512_decode_masks(&block) }, want);
                }
            }
        }
    }

    #[test]
    fn structural_classes_agree_on_random_blocks() {
        let alphabet = b"\"\\{}[]:, \t\r\n\x00\x1f\x7b\x5b\x3a\x2c\xfb\xdb\xff a0";
        for block in test_blocks(0x2545_F491_4F6C_DD1D, alphabet) {
            let portable = Swar::classes(&block);
            assert_eq!(portable.masks, Swar::masks(&block));
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx512bw") {
                // SAFETY: AVX-512BW support was just checked.
                assert_eq!(portable, unsafe { avx512_classes(&block) });
            }
        }
    }
}
