//! What the criterion benchmarks share: a tiny seeded generator, so the inputs are the
//! same on every run and the benchmarks need no extra crates, and where results go.

use std::path::PathBuf;

/// `c` writing its results to `<target>/<dir>` (`CARGO_TARGET_DIR` or the crate's
/// `target`), unless `CRITERION_HOME` names a place.
#[allow(dead_code)] // each benchmark uses part of this module
pub fn with_output_dir(c: criterion::Criterion, dir: &str) -> criterion::Criterion {
    if std::env::var_os("CRITERION_HOME").is_some() {
        return c;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    c.output_directory(&target.join(dir))
}

/// splitmix64 (Steele, Lea, Flood 2014) with Box–Muller normals.
pub struct Rng {
    state: u64,
    spare: Option<f64>,
}

#[allow(dead_code)] // each benchmark uses part of it
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed, spare: None }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so the logarithm in `normal` is finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) * n as f64) as usize % n
    }

    /// Standard normal (both Box–Muller values are used).
    pub fn normal(&mut self) -> f64 {
        if let Some(v) = self.spare.take() {
            return v;
        }
        let radius = (-2.0 * self.uniform().ln()).sqrt();
        let angle = std::f64::consts::TAU * self.uniform();
        self.spare = Some(radius * angle.sin());
        radius * angle.cos()
    }
}
