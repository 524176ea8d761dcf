//! Random numbers: xoshiro256** seeded by splitmix64. Every choice of the generator
//! comes from here, so the same seed always gives the same bytes.

#[derive(Clone, Debug)]
pub(super) struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        let mut x = seed;
        Rng {
            s: [splitmix(&mut x), splitmix(&mut x), splitmix(&mut x), splitmix(&mut x)],
        }
    }

    #[inline]
    pub(super) fn next(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    #[inline]
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    pub(super) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    #[inline]
    pub(super) fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    #[inline]
    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    #[inline]
    pub(super) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    pub(super) fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.f64();
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal with the given median, clamped to `lo..=hi`.
    pub(super) fn lognormal(&mut self, median: f64, sigma: f64, lo: usize, hi: usize) -> usize {
        let v = median * (sigma * self.normal()).exp();
        (v as usize).clamp(lo, hi)
    }

    pub(super) fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.f64() * (hi.ln() - lo.ln())).exp()
    }

    /// Number of failures before a success of probability `p`.
    pub(super) fn geometric(&mut self, p: f64) -> u64 {
        let u = 1.0 - self.f64();
        (u.ln() / (1.0 - p).ln()) as u64
    }
}

pub(super) fn weighted(rng: &mut Rng, w: &[u64]) -> usize {
    let total: u64 = w.iter().sum();
    let mut x = rng.below(total);
    for (i, &v) in w.iter().enumerate() {
        if x < v {
            return i;
        }
        x -= v;
    }
    w.len() - 1
}
