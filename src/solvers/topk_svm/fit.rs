//! The fits as the estimator runs them: the linear fit in front of [`solve_linear`] (the
//! warm start and the choice between the serial solver and CoCoA+), and [`Fit`], one
//! fit of either model from its settings (the linear one through [`fit_linear`], the
//! kernel one through [`solve`] on a [`KernelModel`]).

use super::accelerated::solve_linear;
use super::kernel_model::KernelModel;
use super::loss::SdcaLoss;
use super::model::{LinearModel, ScoreModel};
use super::problem::Examples;
use super::solver::{check_problem, solve, SdcaOptions, SdcaReport};
use crate::data::{Design, RowBuf};
use crate::kernels::{ColumnCache, KernelSource};
use crate::solvers::Monitor;
use crate::Result;

/// Below this many examples a parallel (CoCoA+) solve does not pay for its rounds.
const PARALLEL_MIN_ROWS: usize = 10_000;

/// Linear Prox-SDCA from the dual rows `a` (n × m; zeros for a cold start). W is rebuilt
/// as Σ_i x_i a_iᵀ first, so that the pair the solver starts from is exact. The solve is
/// CoCoA+ over one block per thread of the current pool (at least 2) when `parallel`
/// says so — by default when the pool has 2 threads or more and there are at least
/// 10,000 examples — and serial otherwise; either may hand over to the accelerated
/// outer loop ([`solve_linear`]).
pub fn fit_linear<D: Design, L: SdcaLoss + ?Sized>(
    model: &mut LinearModel<D>,
    loss: &L,
    ex: &Examples,
    a: &mut [f64],
    opts: &SdcaOptions,
    parallel: Option<bool>,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let (n, m) = (model.n_rows(), model.n_classes());
    // The problem's checks before W is rebuilt from `a`: a dual of the wrong shape is
    // most often the sign of labels (or label offsets) that do not fit X.
    check_problem(loss, ex, a, n, m)?;
    model.weights_mut().fill(0.0);
    let mut buf = RowBuf::new();
    for (i, ai) in a.chunks(m).enumerate() {
        if ai.iter().any(|&v| v != 0.0) {
            model.apply(i, ai, &mut buf);
        }
    }
    let threads = rayon::current_num_threads();
    let parallel = parallel.unwrap_or(threads >= 2 && n >= PARALLEL_MIN_ROWS);
    solve_linear(model, loss, ex, a, opts, parallel.then_some(threads.max(2)), monitor)
}

/// A fit's result: the weights (m × (d [+ 1 for the bias feature]); None for a kernel
/// fit), the dual rows (n × m) and the report.
pub type Fitted = (Option<Vec<f64>>, Vec<f64>, SdcaReport);

/// One fit of `examples` under `loss` from the dual rows `dual` (n × m, m = `n_classes`;
/// zeros for a cold start), on a design ([`Fit::linear`]) or a kernel ([`Fit::kernel`]).
pub struct Fit<'a> {
    pub loss: Box<dyn SdcaLoss>,
    pub examples: Examples<'a>,
    pub dual: Vec<f64>,
    pub n_classes: usize,
    pub options: SdcaOptions,
    /// A linear fit's constant feature (intercept), or None.
    pub bias: Option<f64>,
    /// A linear fit's choice of CoCoA+ (None: [`fit_linear`]'s default).
    pub parallel: Option<bool>,
    /// A kernel fit's column cache, in MB.
    pub cache_mb: f64,
}

impl Fit<'_> {
    /// The linear fit on `x` ([`fit_linear`]).
    pub fn linear<D: Design>(mut self, x: &D, monitor: &mut dyn Monitor) -> Result<Fitted> {
        let mut model = LinearModel::new(x, self.n_classes, self.bias);
        let (loss, ex, opts) = (&*self.loss, &self.examples, &self.options);
        let report = fit_linear(&mut model, loss, ex, &mut self.dual, opts, self.parallel, monitor)?;
        Ok((Some(model.weights().to_vec()), self.dual, report))
    }

    /// The kernel fit (scores A·K_i) on `source`, its columns cached; `bias` is a linear
    /// fit's setting: kernel scores have no intercept.
    pub fn kernel<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut dyn Monitor) -> Result<Fitted> {
        let cache = ColumnCache::new(source.n(), self.cache_mb)?;
        let mut model = KernelModel::new(source, self.n_classes, None, cache)?;
        model.sync_dual(&self.dual)?;
        let report = solve(&mut model, &*self.loss, &self.examples, &mut self.dual, &self.options, monitor)?;
        Ok((None, self.dual, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::losses::TopKVariant;
    use crate::solvers::topk_svm::TopKHinge;
    use crate::solvers::Silent;

    fn problem(n: usize, d: usize) -> (Vec<f64>, Vec<usize>) {
        let x = (0..n * d).map(|t| ((t * 7919) % 97) as f64 / 97.0 - 0.5).collect();
        (x, (0..n).map(|i| (i * 31) % 3).collect())
    }

    /// A warm start rebuilds W from the dual rows: after one more epoch from a solve's
    /// rows, W is still Σ_i x_i a_iᵀ (a model left at zero would not be).
    #[test]
    fn a_warm_start_keeps_the_primal_dual_pair() {
        let (n, d, m) = (300, 5, 3);
        let (x, y) = problem(n, d);
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![1.0; n];
        let ex = Examples::new(&y, &c);
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-12, max_epochs: 10, check_every: 10, seed: 1, shrinking: false };
        let mut a = vec![0.0; n * m];
        fit_linear(&mut LinearModel::new(&design, m, Some(1.0)), &loss, &ex, &mut a, &opts, None, &mut Silent).unwrap();
        let mut warm = LinearModel::new(&design, m, Some(1.0));
        let once = SdcaOptions { max_epochs: 1, check_every: 1, ..opts };
        fit_linear(&mut warm, &loss, &ex, &mut a, &once, Some(false), &mut Silent).unwrap();
        let mut rebuilt = LinearModel::new(&design, m, Some(1.0));
        let mut buf = RowBuf::new();
        for (i, ai) in a.chunks(m).enumerate() {
            rebuilt.apply(i, ai, &mut buf);
        }
        for (p, q) in warm.weights().iter().zip(rebuilt.weights()) {
            assert!((p - q).abs() <= 1e-9 * (1.0 + q.abs()), "{p} vs {q}");
        }
        assert!(warm.weights().iter().any(|&w| w != 0.0));
    }

    /// Below 10,000 examples the default is the serial solver, even on two threads.
    #[test]
    fn small_problems_are_solved_serially_by_default() {
        let (n, d, m) = (400, 4, 3);
        let (x, y) = problem(n, d);
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![0.5; n];
        let ex = Examples::new(&y, &c);
        let loss = TopKHinge { k: 2, variant: TopKVariant::Beta, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-9, max_epochs: 20, check_every: 5, seed: 2, shrinking: true };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let fit = |parallel| {
            pool.install(|| {
                let mut model = LinearModel::new(&design, m, None);
                let mut a = vec![0.0; n * m];
                fit_linear(&mut model, &loss, &ex, &mut a, &opts, parallel, &mut Silent).unwrap();
                (a, model.weights().to_vec())
            })
        };
        let (default, serial, parallel) = (fit(None), fit(Some(false)), fit(Some(true)));
        assert_eq!(default, serial);
        assert_ne!(default.0, parallel.0);
    }
}
