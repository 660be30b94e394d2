//! One CoCoA+ round of linear M3L on one partition of the examples (Ma, Smith, Jaggi et
//! al. 2015, "adding" with σ'; the local solver is H epochs of the dual coordinate
//! descent of `dcd.rs`): the M3L counterpart of `topk_svm/local_round.rs`, driven by
//! `toprank.distributed.fit_cocoa`.
//!
//! Problem: the dual D2 (25) of [`super::problem`] with K = X Xᵀ, whose quadratic term is
//! 2 tr(Aᵀ X Xᵀ A R) (A = Y∘α) and whose primal is Z = 2 Xᵀ A R. With the examples split
//! into partitions P_k and the broadcast Z, partition k maximises its local subproblem
//!   G_k(Δα_k) = Σ_{P_k} b∘Δα − ⟨Z, ΔZ_k⟩_{R⁻¹}/2 − (σ'/4)⟨ΔZ_k, ΔZ_k⟩_{R⁻¹},  ΔZ_k = 2 X_kᵀ ΔA_k R,
//! by the exact coordinate steps (37) against the local weights u = Z + σ'ΔZ_k with the
//! curvature σ'·4R_ll‖x_p‖² (`dcd::Sweep` with σ'); the driver then sets
//! Z ← Z + Σ_k (u_k − Z)/σ'. With σ' = K the sum of the local subproblems lower-bounds
//! the dual's change (CoCoA+ Lemma 3), so D never decreases. With K = 1 and σ' = 1 the
//! steps and their order are those of `solve_dcd` without shrinking, bit for bit.
//!
//! [`partition_terms`] gives the partition's shares of P and D (both are sums over the
//! examples of terms of (α_i, f_i = Z x_i), see `problem.rs`) and its largest projected
//! gradient, the stopping measure of M3L.

use super::dcd::{primal_width, sq_norms_of, training_scores, LabelMajor, Sweep};
use super::problem::{label_major, projected, row_major, M3l};
use crate::data::Design;
use crate::solvers::topk_svm::NamedArrays;
use crate::solvers::Monitor;
use crate::{Error, Result};

/// What one round does: epochs `first_epoch .. first_epoch + epochs` (numbered from 1)
/// of the partition's coordinate descent, against local weights scaled by σ'.
#[derive(Debug, Clone, Copy)]
pub struct M3lRoundOptions {
    pub sigma: f64,
    pub first_epoch: u64,
    pub epochs: u64,
    pub seed: u64,
    pub bias: Option<f64>,
}

fn check<D: Design>(problem: &M3l<'_>, x: &D, alpha: &[f64], z: &[f64], bias: Option<f64>) -> Result<()> {
    let (n, labels) = (problem.n, problem.labels);
    if x.n_rows() != n {
        return Err(Error::input("X", format!("has {} rows, Y has {n}", x.n_rows())));
    }
    check_dual(alpha, n, labels, problem.c)?;
    let width = primal_width(x, bias);
    if z.len() != labels * width || z.iter().any(|v| !v.is_finite()) {
        return Err(Error::input("coef", format!("must hold {labels} x {width} finite values")));
    }
    Ok(())
}

/// Checks α_k: n × L values in [0, C] (every call's check, and a restored state's).
pub fn check_dual(alpha: &[f64], n: usize, labels: usize, c: f64) -> Result<()> {
    if alpha.len() != n * labels || alpha.iter().any(|&a| !(0.0..=c).contains(&a)) {
        return Err(Error::input("dual", format!("must hold {n} x {labels} values in [0, C]")));
    }
    Ok(())
}

/// Runs one round on the partition (`problem` holds its rows of Y and the losses) from
/// the broadcast Z; updates α_k in place and returns u = Z + σ'ΔZ_k, or `None` if the
/// monitor asked to stop (between labels; the caller drops the fit).
pub fn local_round<D: Design>(
    problem: &M3l<'_>,
    x: &D,
    alpha: &mut [f64],
    z: &[f64],
    sq_norms: &[f64],
    opts: &M3lRoundOptions,
    monitor: &mut dyn Monitor,
) -> Result<Option<Vec<f64>>> {
    check(problem, x, alpha, z, opts.bias)?;
    if !(opts.sigma >= 1.0 && opts.sigma.is_finite()) {
        return Err(Error::param("sigma", format!("must be finite and >= 1, got {}", opts.sigma)));
    }
    if opts.first_epoch == 0 {
        return Err(Error::param("first_epoch", "epochs are numbered from 1"));
    }
    if sq_norms.len() != problem.n {
        return Err(Error::input("sq_norms", format!("must hold {} values", problem.n)));
    }
    let columns = LabelMajor::of(problem);
    let sweep = Sweep { problem, y: &columns.y, b: &columns.b, x, bias: opts.bias, sq_norms, sigma: opts.sigma };
    let n = problem.n;
    let mut u = z.to_vec();
    // Label-major α for the sweeps (label l's N variables contiguous).
    let mut a = label_major(alpha, n, problem.labels);
    let (mut labels, mut set, mut pending) = (Vec::new(), Vec::with_capacity(n), Vec::new());
    for epoch in opts.first_epoch..opts.first_epoch + opts.epochs {
        sweep.label_order(&mut labels, opts.seed, epoch);
        for &l in &labels {
            if monitor.should_stop() {
                return Ok(None);
            }
            set.clear();
            set.extend(0..n);
            sweep.example_order(&mut set, opts.seed, epoch, l);
            sweep.label_and_coupled(l, &mut set, None, &mut a[l * n..(l + 1) * n], &mut u, &mut pending);
        }
    }
    alpha.copy_from_slice(&row_major(&a, n, problem.labels));
    Ok(Some(u))
}

/// The partition's share of (P, D) at (Z, α_k), and its largest |projected gradient|.
pub fn partition_terms<D: Design>(
    problem: &M3l<'_>,
    x: &D,
    alpha: &[f64],
    z: &[f64],
    bias: Option<f64>,
) -> Result<(f64, f64, f64)> {
    check(problem, x, alpha, z, bias)?;
    let scores = training_scores(problem, x, z, primal_width(x, bias), bias);
    let (primal, dual) = problem.objectives(alpha, &scores);
    let worst = (0..problem.n * problem.labels)
        .map(|idx| projected(alpha[idx], problem.b(idx) - 2.0 * problem.y[idx] * scores[idx], problem.c).abs())
        .fold(0.0, f64::max);
    Ok((primal, dual, worst))
}

/// ‖x_i‖² (+ bias²) of the partition's rows, kept by the partition across its rounds.
pub fn partition_sq_norms<D: Design>(x: &D, bias: Option<f64>) -> Vec<f64> {
    sq_norms_of(x, bias)
}

/// A partition of a CoCoA+ fit of linear M3L where its rows live (`toprank.distributed`
/// keeps one on the worker that holds them): its rows of Y and of the losses, R and C,
/// its ‖x_i‖², α_k and its next round. Each call takes the partition's X.
#[derive(Debug, Clone)]
pub struct Partition {
    n: usize,
    labels: usize,
    c: f64,
    /// Y (±1), R, Δ⁺ and Δ⁻, row-major (see [`M3l`]).
    arrays: [Vec<f64>; 4],
    sq_norms: Vec<f64>,
    alpha: Vec<f64>,
    next: M3lRoundOptions,
}

impl Partition {
    /// α_k = 0 over the rows whose ‖x_i‖² (+ bias²) are `sq_norms`, with the rounds from
    /// `opts.first_epoch` on; the problem is checked unless the partition is empty (it
    /// takes no round).
    pub fn new(
        labels: usize,
        arrays: [Vec<f64>; 4],
        c: f64,
        sq_norms: Vec<f64>,
        opts: M3lRoundOptions,
    ) -> Result<Self> {
        let n = sq_norms.len();
        let size = n.checked_mul(labels).ok_or_else(|| Error::input("Y", "too large"))?;
        let part = Self { n, labels, c, arrays, sq_norms, alpha: vec![0.0; size], next: opts };
        if part.arrays[0].len() != size {
            return Err(Error::input("Y", format!("must have {n} rows (X's) of {labels} labels")));
        }
        if n > 0 {
            part.problem()?;
        }
        Ok(part)
    }

    fn problem(&self) -> Result<M3l<'_>> {
        let [y, r, plus, minus] = &self.arrays;
        M3l::new(self.n, self.labels, y, r, self.c, plus, minus)
    }

    pub fn labels(&self) -> usize {
        self.labels
    }

    /// The state as named arrays (`topk_svm::Partition::to_named`'s layout): `dual` (α_k, rows
    /// of L values) and `epoch` (the next round's first).
    pub fn to_named(&self) -> NamedArrays {
        let mut named = NamedArrays::default();
        named.floats.insert("dual".into(), self.alpha.clone());
        named.ints.insert("epoch".into(), vec![self.next.first_epoch as i64]);
        named
    }

    /// Replaces the state by [`to_named`](Self::to_named)'s arrays from elsewhere (a
    /// checkpoint, a transfer), checked.
    pub fn restore(&mut self, mut named: NamedArrays) -> Result<()> {
        let alpha = named.floats.remove("dual").unwrap_or_default();
        check_dual(&alpha, self.n, self.labels, self.c)?;
        let [epoch] = named.take_indices("epoch", "epoch")?[..] else {
            return Err(Error::input("epoch", "must hold the next round's first epoch"));
        };
        if epoch == 0 {
            return Err(Error::input("epoch", "epochs are numbered from 1"));
        }
        (self.alpha, self.next.first_epoch) = (alpha, epoch as u64);
        Ok(())
    }

    /// M3L's rounds aggregate by adding: the driver's step t is 1 and nothing is pending.
    pub fn commit(&self, t: f64) -> Result<()> {
        if t == 1.0 {
            Ok(())
        } else {
            Err(Error::param("step", format!("M3L rounds add (t = 1), got {t}")))
        }
    }

    /// One round ([`local_round`]) from the broadcast Z; the next one continues with the
    /// following epochs.
    pub fn round<D: Design>(&mut self, x: &D, z: &[f64], monitor: &mut dyn Monitor) -> Result<Option<Vec<f64>>> {
        let [y, r, plus, minus] = &self.arrays;
        let problem = M3l::new(self.n, self.labels, y, r, self.c, plus, minus)?;
        let local = local_round(&problem, x, &mut self.alpha, z, &self.sq_norms, &self.next, monitor)?;
        if local.is_some() {
            self.next.first_epoch += self.next.epochs;
        }
        Ok(local)
    }

    /// The partition's shares of (P, D) at (Z, α_k) and its largest |projected gradient|
    /// ([`partition_terms`]).
    pub fn terms<D: Design>(&self, x: &D, z: &[f64]) -> Result<(f64, f64, f64)> {
        partition_terms(&self.problem()?, x, &self.alpha, z, self.next.bias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::rng::SplitMix64;
    use crate::solvers::m3l::{solve_dcd, DcdOptions};
    use crate::solvers::Silent;

    struct Data {
        x: Vec<f64>,
        y: Vec<f64>,
        r: Vec<f64>,
        plus: Vec<f64>,
        minus: Vec<f64>,
    }

    fn data(n: usize, d: usize, labels: usize, seed: u64) -> Data {
        let mut rng = SplitMix64::new(seed);
        let x: Vec<f64> = (0..n * d).map(|_| rng.next_f64() - 0.5).collect();
        let y =
            (0..n * labels)
                .map(|t| {
                    if (x[(t / labels) * d + t % labels % d] + 0.3 * (rng.next_f64() - 0.5)) > 0.0 {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect();
        let mut r = vec![0.0; labels * labels];
        for l in 0..labels {
            for k in 0..labels {
                r[l * labels + k] = if l == k { 1.0 } else { 0.1 };
            }
        }
        Data { x, y, r, plus: vec![0.0; n * labels], minus: vec![2.0; n * labels] }
    }

    /// α and Z after six epochs of `solve_dcd` without shrinking (seed 4): what rounds of
    /// one partition with σ' = 1 must reproduce bit for bit.
    fn six_serial_epochs(problem: &M3l<'_>, x: &DenseRows<'_, f64>, bias: Option<f64>) -> (Vec<f64>, Vec<f64>) {
        let mut alpha = vec![0.0; problem.n * problem.labels];
        let options = DcdOptions { tol: 1e-300, max_iter: 6, seed: 4, bias, shrinking: false };
        let (_, z) = solve_dcd(problem, x, &mut alpha, &options, &mut Silent).unwrap();
        (alpha, z)
    }

    /// One partition, σ' = 1: rounds are the epochs of `solve_dcd` without shrinking.
    #[test]
    fn one_partition_is_the_serial_solver() {
        let (n, d, labels, bias) = (50, 3, 4, Some(1.0));
        let v = data(n, d, labels, 2);
        let problem = M3l::new(n, labels, &v.y, &v.r, 0.7, &v.plus, &v.minus).unwrap();
        let x = DenseRows::new(&v.x, n, d).unwrap();
        let (serial, z_serial) = six_serial_epochs(&problem, &x, bias);
        let norms = partition_sq_norms(&x, bias);
        let (mut alpha, mut z) = (vec![0.0; n * labels], vec![0.0; labels * (d + 1)]);
        for epoch in 1..=6 {
            let opts = M3lRoundOptions { sigma: 1.0, first_epoch: epoch, epochs: 1, seed: 4, bias };
            z = local_round(&problem, &x, &mut alpha, &z, &norms, &opts, &mut Silent).unwrap().unwrap();
        }
        assert!(alpha.iter().zip(&serial).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(z.iter().zip(&z_serial).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    /// The same through a [`Partition`]: its rounds continue epoch by epoch, and its state
    /// restores into a new partition that continues bit for bit.
    #[test]
    fn partition_rounds_are_the_serial_solver_and_restore() {
        let (n, d, labels, bias) = (50, 3, 4, Some(1.0));
        let v = data(n, d, labels, 2);
        let problem = M3l::new(n, labels, &v.y, &v.r, 0.7, &v.plus, &v.minus).unwrap();
        let x = DenseRows::new(&v.x, n, d).unwrap();
        let (serial, z_serial) = six_serial_epochs(&problem, &x, bias);
        let arrays = [&v.y, &v.r, &v.plus, &v.minus].map(|a| a.to_vec());
        let opts = M3lRoundOptions { sigma: 1.0, first_epoch: 1, epochs: 2, seed: 4, bias };
        let new = || Partition::new(labels, arrays.clone(), 0.7, partition_sq_norms(&x, bias), opts).unwrap();
        let (mut part, mut z) = (new(), vec![0.0; labels * (d + 1)]);
        z = part.round(&x, &z, &mut Silent).unwrap().unwrap();
        let mut copy = new();
        copy.restore(part.to_named()).unwrap();
        assert_eq!(copy.to_named(), part.to_named());
        for part in [&mut part, &mut copy] {
            let mut u = z.clone();
            for _ in 0..2 {
                u = part.round(&x, &u, &mut Silent).unwrap().unwrap();
            }
            assert!(u.iter().zip(&z_serial).all(|(a, b)| a.to_bits() == b.to_bits()));
            assert!(part.to_named().floats["dual"].iter().zip(&serial).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        let mut bad = part.to_named();
        bad.floats.get_mut("dual").unwrap()[0] = -1.0;
        assert!(copy.restore(bad).is_err() && part.commit(0.5).is_err());
        // An empty partition is built unchecked and takes no round.
        let empty = DenseRows::new(&[] as &[f64], 0, d).unwrap();
        let mut none = Partition::new(labels, Default::default(), 0.7, Vec::new(), opts).unwrap();
        assert!(none.round(&empty, &z, &mut Silent).is_err());
    }

    /// Three partitions with σ' = 3 reach the serial optimum with D never decreasing.
    #[test]
    fn partitions_reach_the_serial_optimum() {
        let (n, d, labels) = (90, 3, 3);
        let v = data(n, d, labels, 5);
        let whole = M3l::new(n, labels, &v.y, &v.r, 0.5, &v.plus, &v.minus).unwrap();
        let x = DenseRows::new(&v.x, n, d).unwrap();
        let mut serial = vec![0.0; n * labels];
        let options = DcdOptions { tol: 1e-10, max_iter: 100_000, seed: 1, bias: None, shrinking: true };
        let (report, _) = solve_dcd(&whole, &x, &mut serial, &options, &mut Silent).unwrap();
        let cuts = [0, 30, 31, 90];
        let mut alphas: Vec<Vec<f64>> = cuts.windows(2).map(|c| vec![0.0; (c[1] - c[0]) * labels]).collect();
        let mut z = vec![0.0; labels * d];
        let mut last = f64::NEG_INFINITY;
        for round in 1..=20_000u64 {
            let (mut primal, mut dual, mut worst) = (0.0, 0.0, 0.0f64);
            let mut next = z.clone();
            for (k, alpha) in alphas.iter_mut().enumerate() {
                let rows = cuts[k]..cuts[k + 1];
                let part = M3l::new(
                    rows.len(),
                    labels,
                    &v.y[rows.start * labels..rows.end * labels],
                    &v.r,
                    0.5,
                    &v.plus[rows.start * labels..rows.end * labels],
                    &v.minus[rows.start * labels..rows.end * labels],
                )
                .unwrap();
                let xk = DenseRows::new(&v.x[rows.start * d..rows.end * d], rows.len(), d).unwrap();
                let (p, q, w) = partition_terms(&part, &xk, alpha, &z, None).unwrap();
                (primal, dual, worst) = (primal + p, dual + q, worst.max(w));
                let opts =
                    M3lRoundOptions { sigma: 3.0, first_epoch: round, epochs: 1, seed: 10 + k as u64, bias: None };
                let u = local_round(&part, &xk, alpha, &z, &partition_sq_norms(&xk, None), &opts, &mut Silent)
                    .unwrap()
                    .unwrap();
                next.iter_mut().zip(u.iter().zip(&z)).for_each(|(t, (&u, &z))| *t += (u - z) / 3.0);
            }
            assert!(dual >= last - 1e-12 * dual.abs(), "round {round}: D fell from {last} to {dual}");
            last = dual;
            z = next;
            if worst < 1e-9 {
                assert!((primal - report.primal).abs() <= 1e-7 * report.primal.abs(), "{primal} vs {}", report.primal);
                return;
            }
        }
        panic!("no convergence");
    }
}
