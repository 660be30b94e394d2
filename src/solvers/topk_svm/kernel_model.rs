//! Kernel Prox-SDCA's primal side (Lapin, Hein, Schiele 2015, §3.2): W = Σ_j φ(x_j) a_jᵀ
//! is never formed. The scores of example i are
//!
//!   s = Wᵀφ(x_i) = Σ_j K(i, j) a_j   (A K_i in the paper, with A the m × n dual matrix),
//!
//! kii = K(i, i), and ‖W‖²_F = Σ_i ⟨a_i, s_i⟩, which the gap pass already sums
//! (`sq_norm_w(from_scores)` returns it). The solver updates A itself; `apply` only
//! records which rows a_j may be nonzero: with hinge losses most a_j are 0, and the sum
//! runs over that support list alone. Rows that went back to zero are dropped from the
//! list when the serial loop has made about as many steps as the list is long (O(m)
//! amortised per step).
//!
//! Kernel values: the serial loop (`scores_mut`) reads column i through an LRU
//! [`ColumnCache`]; the parallel gap pass (`scores`, `&self`) reads the cached column
//! when there is one and otherwise computes only the entries K(i, j) of the support
//! (`KernelSource::entries_into`) into a per-thread buffer (allocation-free once warm).
//! Sources give bit-identical values on all paths and the sum runs in support-list
//! order, so `scores` and `scores_mut` agree exactly.
//!
//! Intercept (`bias = Some(b)`): the constant feature b appended to φ(x), i.e. the kernel
//! K + b² (as `LinearModel`'s appended column b, LIBLINEAR's `intercept_scaling`). Then
//! s = Σ_j K(i, j) a_j + b²·σ with σ = Σ_j a_j kept up to date by `apply`, kii = K(i, i) +
//! b², and the decision function is Σ_j K(z, x_j) a_j + b²σ ([`KernelModel::intercept`]).

use std::cell::RefCell;

use super::model::ScoreModel;
use crate::data::RowBuf;
use crate::kernels::{ColumnCache, KernelSource};
use crate::linalg::axpy;
use crate::{Error, Result};

/// Fewest serial steps between two prunings of the support list.
const PRUNE_MIN: usize = 64;

thread_local! {
    /// The gap pass's kernel entries K(i, support) (grows to the support size, then reused).
    static ENTRIES: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Scores Σ_j K(i, j) a_j over a kernel source, for Prox-SDCA ([`super::solve`]).
pub struct KernelModel<'a, S: KernelSource + ?Sized> {
    source: &'a S,
    m: usize,
    /// b² of the intercept (0 without one).
    b2: f64,
    bias: Option<f64>,
    cache: ColumnCache,
    /// Rows j that may have a_j ≠ 0 (every nonzero row is listed), in insertion order.
    support: Vec<usize>,
    listed: Vec<bool>,
    /// σ = Σ_j a_j (maintained only with an intercept).
    sum_a: Vec<f64>,
    since_prune: usize,
}

impl<'a, S: KernelSource + ?Sized> KernelModel<'a, S> {
    /// A model for a zero dual matrix with m classes over `source`, with an optional
    /// intercept (`bias = Some(b)`: constant feature b, see the module docs) and a column
    /// cache for `source` (e.g. `ColumnCache::new(n, cache_size_mb)`; pass the same cache
    /// back in via [`KernelModel::into_cache`] to reuse columns across fits). For a
    /// nonzero warm start call [`KernelModel::sync_dual`] (or `apply(i, a_i)` per row).
    pub fn new(source: &'a S, m: usize, bias: Option<f64>, cache: ColumnCache) -> Result<Self> {
        let n = source.n();
        if cache.n() != n {
            return Err(Error::param(
                "cache",
                format!("holds columns of length {}, the kernel has n = {n}", cache.n()),
            ));
        }
        if m == 0 {
            return Err(Error::input("y", "needs at least one class"));
        }
        if let Some(b) = bias {
            if !b.is_finite() {
                return Err(Error::param("intercept_scaling", format!("must be finite, got {b}")));
            }
        }
        Ok(Self {
            source,
            m,
            b2: bias.map_or(0.0, |b| b * b),
            bias,
            cache,
            support: Vec::new(),
            listed: vec![false; n],
            sum_a: vec![0.0; m],
            since_prune: 0,
        })
    }

    pub fn source(&self) -> &'a S {
        self.source
    }

    pub fn bias(&self) -> Option<f64> {
        self.bias
    }

    /// The column cache (hit and miss counters).
    pub fn cache(&self) -> &ColumnCache {
        &self.cache
    }

    /// Gives the cache back (its columns stay valid for the same kernel).
    pub fn into_cache(self) -> ColumnCache {
        self.cache
    }

    /// Loads the kernel columns of the examples `idx` into the cache in one blocked,
    /// parallel computation (e.g. the next examples of an epoch's order), instead of one
    /// column per cache miss. Returns the number of columns computed.
    pub fn prefetch(&mut self, idx: &[usize]) -> usize {
        self.cache.prefetch(idx, self.source)
    }

    /// Rows that may have a_j ≠ 0 (a superset of the nonzero rows until the next pruning).
    pub fn support(&self) -> &[usize] {
        &self.support
    }

    /// Rebuilds the support list (and σ) from `a` (n × m, row-major): for warm starts or
    /// whenever `a` changed other than through the solver.
    pub fn sync_dual(&mut self, a: &[f64]) -> Result<()> {
        let (n, m) = (self.source.n(), self.m);
        if a.len() != n * m {
            return Err(Error::input("dual_coef", format!("must have {n} x {m} entries, got {}", a.len())));
        }
        self.support.clear();
        self.listed.fill(false);
        self.sum_a.fill(0.0);
        for (j, aj) in a.chunks_exact(m).enumerate() {
            if aj.iter().any(|&v| v != 0.0) {
                self.support.push(j);
                self.listed[j] = true;
                self.sum_a.iter_mut().zip(aj).for_each(|(s, &v)| *s += v);
            }
        }
        self.since_prune = 0;
        Ok(())
    }

    /// The additive constant of the decision function for each class, b²·Σ_j a_j, summed
    /// exactly from `a` (zero without an intercept).
    pub fn intercept(&self, a: &[f64]) -> Vec<f64> {
        let m = self.m;
        let mut out = vec![0.0; m];
        if self.b2 != 0.0 {
            for &j in &self.support {
                out.iter_mut().zip(&a[j * m..(j + 1) * m]).for_each(|(o, &v)| *o += v);
            }
            out.iter_mut().for_each(|o| *o *= self.b2);
        }
        out
    }

    /// Drops the rows with a_j = 0 from the support list (keeping the order).
    fn prune(&mut self, a: &[f64]) {
        let (m, listed) = (self.m, &mut self.listed);
        self.support.retain(|&j| {
            let keep = a[j * m..(j + 1) * m].iter().any(|&v| v != 0.0);
            listed[j] = keep;
            keep
        });
        self.since_prune = 0;
    }
}

/// s = Σ_t k(t, j_t) a_{j_t} + b²σ over the support list j_0, j_1, ... (in order).
fn accumulate(
    support: &[usize],
    kernel: impl Fn(usize, usize) -> f64,
    a: &[f64],
    b2: f64,
    sum_a: &[f64],
    s: &mut [f64],
) {
    let m = s.len();
    s.fill(0.0);
    for (t, &j) in support.iter().enumerate() {
        let k = kernel(t, j);
        if k != 0.0 {
            axpy(k, &a[j * m..(j + 1) * m], s);
        }
    }
    if b2 != 0.0 {
        s.iter_mut().zip(sum_a).for_each(|(v, &sa)| *v += b2 * sa);
    }
}

impl<S: KernelSource + ?Sized> ScoreModel for KernelModel<'_, S> {
    fn n_rows(&self) -> usize {
        self.source.n()
    }

    fn n_classes(&self) -> usize {
        self.m
    }

    fn sq_norm(&self, i: usize) -> f64 {
        self.source.diag(i) + self.b2
    }

    fn reads_dual(&self) -> bool {
        true
    }

    fn scores(&self, i: usize, a: &[f64], s: &mut [f64], _buf: &mut RowBuf) {
        let (support, b2, sum_a) = (&self.support[..], self.b2, &self.sum_a[..]);
        if support.is_empty() {
            return accumulate(support, |_, _| 0.0, a, b2, sum_a, s);
        }
        if let Some(col) = self.cache.peek(i) {
            return accumulate(support, |_, j| col[j], a, b2, sum_a, s);
        }
        let mut run = |entries: &mut Vec<f64>| {
            entries.resize(support.len(), 0.0);
            self.source.entries_into(i, support, entries);
            accumulate(support, |t, _| entries[t], a, b2, sum_a, s);
        };
        ENTRIES.with(|cell| match cell.try_borrow_mut() {
            Ok(mut entries) => run(&mut entries),
            // Only if a source re-entered this model on the same thread.
            Err(_) => run(&mut Vec::new()),
        })
    }

    fn scores_mut(&mut self, i: usize, a: &[f64], s: &mut [f64], _buf: &mut RowBuf) {
        self.since_prune += 1;
        if self.since_prune >= self.support.len().max(PRUNE_MIN) {
            self.prune(a);
        }
        if self.support.is_empty() {
            // No kernel column needed (the first steps from a zero start).
            return accumulate(&[], |_, _| 0.0, a, self.b2, &self.sum_a, s);
        }
        let col = self.cache.get(i, self.source);
        accumulate(&self.support, |_, j| col[j], a, self.b2, &self.sum_a, s)
    }

    fn apply(&mut self, i: usize, delta: &[f64], _buf: &mut RowBuf) {
        if delta.iter().all(|&d| d == 0.0) {
            return;
        }
        if !self.listed[i] {
            self.listed[i] = true;
            self.support.push(i);
        }
        if self.b2 != 0.0 {
            self.sum_a.iter_mut().zip(delta).for_each(|(s, &d)| *s += d);
        }
    }

    fn sq_norm_w(&self, from_scores: f64) -> f64 {
        from_scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrRows, DenseRows};
    use crate::kernels::{DataKernel, KernelFunction, PrecomputedKernel};
    use crate::losses::TopKVariant;
    use crate::rng::SplitMix64;
    use crate::solvers::topk_svm::{solve, Examples, LinearModel, SdcaOptions, SdcaReport, TopKHinge};
    use crate::solvers::{Silent, Status};

    fn uniform(rng: &mut SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn gram(src: &dyn KernelSource) -> Vec<f64> {
        let n = src.n();
        let mut k = vec![0.0; n * n];
        (0..n).for_each(|i| src.column_into(i, &mut k[i * n..(i + 1) * n]));
        k
    }

    fn close(u: &[f64], v: &[f64], tol: f64) -> bool {
        u.iter().zip(v).all(|(u, v)| (u - v).abs() <= tol * (1.0 + v.abs()))
    }

    #[test]
    fn scores_equal_explicit_kernel_times_dual() {
        let (n, d, m) = (50, 3, 5);
        let mut rng = SplitMix64::new(21);
        let x: Vec<f64> = (0..n * d).map(|_| 2.0 * uniform(&mut rng) - 1.0).collect();
        let dense = DenseRows::new(&x, n, d).unwrap();
        let src = DataKernel::new(&dense, KernelFunction::Rbf { gamma: 0.5 }).unwrap();
        let k = gram(&src);
        let mut a: Vec<f64> = (0..n * m).map(|_| uniform(&mut rng) - 0.5).collect();
        (0..n).filter(|j| j % 3 == 0).for_each(|j| a[j * m..(j + 1) * m].fill(0.0));
        for bias in [None, Some(0.7)] {
            let b2 = bias.map_or(0.0, |b: f64| b * b);
            let explicit = |a: &[f64], i: usize| -> Vec<f64> {
                (0..m).map(|c| (0..n).map(|j| (k[i * n + j] + b2) * a[j * m + c]).sum()).collect()
            };
            // Tiny cache: both the hit and the computed-entries paths of `scores` run.
            let mut model = KernelModel::new(&src, m, bias, ColumnCache::with_columns(n, 2).unwrap()).unwrap();
            model.sync_dual(&a).unwrap();
            assert_eq!(model.support().len(), n - n.div_ceil(3));
            let (mut s1, mut s2, mut buf) = (vec![0.0; m], vec![0.0; m], RowBuf::new());
            for i in (0..n).chain([3, 3, 4]) {
                model.scores(i, &a, &mut s1, &mut buf);
                model.scores_mut(i, &a, &mut s2, &mut buf);
                assert_eq!(s1, s2);
                model.scores(i, &a, &mut s1, &mut buf); // now from the cached column
                assert_eq!(s1, s2);
                assert!(close(&s1, &explicit(&a, i), 1e-12));
                assert_eq!(model.sq_norm(i), 1.0 + b2);
            }
            assert_eq!((model.cache().misses(), model.cache().hits()), (n as u64 + 2, 1));
            assert_eq!(model.prefetch(&[8, 9, 4]), 1); // 4 is cached and kept: room for 8 only
            model.scores_mut(9, &a, &mut s2, &mut buf);
            assert_eq!(model.cache().misses(), n as u64 + 4);
            let sigma: Vec<f64> = (0..m).map(|c| b2 * (0..n).map(|j| a[j * m + c]).sum::<f64>()).collect();
            assert!(close(&model.intercept(&a), &sigma, 1e-12));

            // Built through `apply` instead: same support, σ and scores.
            let mut model2 = KernelModel::new(&src, m, bias, ColumnCache::new(n, 1.0).unwrap()).unwrap();
            model2.scores_mut(0, &a, &mut s1, &mut buf);
            assert!(s1.iter().all(|&v| v == 0.0) && model2.cache().misses() == 0);
            for (j, aj) in a.chunks(m).enumerate() {
                model2.apply(j, aj, &mut buf);
            }
            assert_eq!(model2.support(), model.support());
            model2.scores(7, &a, &mut s1, &mut buf);
            assert!(close(&s1, &explicit(&a, 7), 1e-12));
            // A row that went back to zero is dropped within max(|support|, 64) steps.
            let mut a2 = a.clone();
            a2[m..2 * m].fill(0.0);
            (0..PRUNE_MIN).for_each(|i| model2.scores_mut(i % n, &a2, &mut s2, &mut buf));
            assert_eq!(model2.support().len(), n - n.div_ceil(3) - 1);
            if bias.is_none() {
                model2.scores(7, &a2, &mut s1, &mut buf);
                assert!(close(&s1, &explicit(&a2, 7), 1e-12));
            }
        }
        let wrong = ColumnCache::new(n + 1, 1.0).unwrap();
        assert!(KernelModel::new(&src, m, None, wrong).is_err());
        let mut model = KernelModel::new(&src, m, None, ColumnCache::new(n, 1.0).unwrap()).unwrap();
        assert!(model.sync_dual(&a[1..]).is_err());
    }

    /// A small 4-class problem with some label noise.
    fn problem(n: usize, d: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
        let mut rng = SplitMix64::new(seed);
        let x: Vec<f64> = (0..n * d).map(|_| 2.0 * uniform(&mut rng) - 1.0).collect();
        let y = (0..n)
            .map(|i| {
                if rng.below(4) == 0 {
                    rng.below(m)
                } else {
                    (0..m).max_by(|&p, &q| x[i * d + p].total_cmp(&x[i * d + q])).unwrap()
                }
            })
            .collect();
        (x, y)
    }

    fn run<M: ScoreModel>(model: &mut M, y: &[usize], c: &[f64], smoothing: f64) -> SdcaReport {
        let ex = Examples::new(y, c);
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing };
        let opts = SdcaOptions { tol: 1e-9, max_epochs: 5000, check_every: 5, seed: 1, shrinking: true };
        let mut a = vec![0.0; model.n_rows() * model.n_classes()];
        let r = solve(model, &loss, &ex, &mut a, &opts, &mut Silent).unwrap();
        assert_eq!(r.status, Status::Converged);
        assert!(r.objectives.relative_gap() <= 1e-9, "{:?}", r.objectives);
        r
    }

    /// Kernel SDCA with a linear kernel solves the same problem as linear SDCA (no bias
    /// and with the intercept), over dense rows, CSR rows and the precomputed Gram matrix.
    #[test]
    fn kernel_sdca_matches_linear_sdca() {
        let (n, d, m) = (30, 4, 4);
        let (x, y) = problem(n, d, m, 9);
        let c = vec![1.0; n];
        let dense = DenseRows::new(&x, n, d).unwrap();
        let (mut indptr, mut indices, mut data) = (vec![0i32], Vec::new(), Vec::new());
        for row in x.chunks(d) {
            for (j, &v) in row.iter().enumerate() {
                indices.push(j as i32);
                data.push(v);
            }
            indptr.push(indices.len() as i32);
        }
        let csr = CsrRows::new(&indptr, &indices, &data, d).unwrap();
        for bias in [None, Some(1.0)] {
            let p0 = run(&mut LinearModel::new(&dense, m, bias), &y, &c, 0.0).objectives.primal;
            assert!(p0 > 0.0);
            let cache = || ColumnCache::with_columns(n, 10).unwrap();
            let kd = DataKernel::new(&dense, KernelFunction::Linear).unwrap();
            let ks = DataKernel::new(&csr, KernelFunction::Linear).unwrap();
            let g = gram(&kd);
            let kp = PrecomputedKernel::new(&g, n, n).unwrap();
            kp.check_symmetric(0.0).unwrap();
            let sources: [&dyn KernelSource; 3] = [&kd, &ks, &kp];
            for src in sources {
                let mut model = KernelModel::new(src, m, bias, cache()).unwrap();
                let p = run(&mut model, &y, &c, 0.0).objectives.primal;
                assert!((p - p0).abs() <= 1e-6 * p0, "{p} vs {p0} (bias {bias:?})");
                assert!(model.cache().hits() > 0);
            }
        }
    }

    #[test]
    fn rbf_kernel_sdca_closes_the_gap() {
        let (n, d, m) = (80, 3, 3);
        let (x, y) = problem(n, d, m, 3);
        let dense = DenseRows::new(&x, n, d).unwrap();
        let src = DataKernel::new(&dense, KernelFunction::Rbf { gamma: 2.0 }).unwrap();
        let mut model = KernelModel::new(&src, m, None, ColumnCache::new(n, 1.0).unwrap()).unwrap();
        let r = run(&mut model, &y, &vec![10.0; n], 0.1);
        assert!(r.objectives.primal > 0.0);
        assert!(model.support().len() < n);
    }
}
