//! Algorithm R1D, rank-one descent (Harchaoui, Douze, Paulin, Dudik, Malick, CVPR 2012
//! §4), for trace-norm regularised multinomial logistic regression.
//!
//! Problem (4): over W (d × m) and, with `fit_intercept`, an unpenalised intercept b,
//!   min J(W, b) = λ1 ‖W‖_σ,1 + λ2 ‖W‖²_F + R_n(X W + 1 bᵀ),
//!   R_n(S) = (1/n) Σ_i log Σ_l exp(s_il − s_iy_i),
//! or with sample weights the weighted mean Σ_i c_i log Σ_l exp(s_il − s_iy_i),
//! c_i = w_i / Σ_j w_j (`multinomial.rs`; every 1/n below is then c_i).
//! W is a non-negative combination Σ_j θ_j u_j v_jᵀ of unit rank-one atoms (Proposition 1
//! turns the trace norm into Σ_j θ_j); write R̃ = λ2‖W‖²_F + R_n and G = ∇R̃(W) =
//! Xᵀ(P − Y)/n + 2λ2 W. The fit stops at ε-optimality (ε = `tol`):
//!
//! * (C1) σ_max(−G) ≤ λ1 + ε — no new atom descends by more than ε;
//! * (C2) |⟨G, u_j v_jᵀ⟩ + λ1| ≤ ε for every atom with θ_j > 0, and ‖∇_b‖_∞ ≤ ε,
//!
//! checked on W's singular pairs as the atoms.
//!
//! Each iteration takes the top singular pair (u, v) of −G (`singular.rs`, block subspace
//! iteration warm-started from the previous Ritz vectors) and, when it descends
//! (g = λ1 − σ_max < −ε/2), adds the atom u vᵀ with an Armijo step along it
//! (`multinomial.rs`; only the n-vector X u is new: S moves by δ (X u) vᵀ), together with
//! every other Ritz pair whose value also exceeds λ1 (near the optimum the rank-one steps
//! barely move the gradient, so the next iterations would add these same directions one
//! by one; measured: 24 iterations of 1e-11 gains each became 6 on the benchmark). Every
//! `subspace_every` steps, whenever such extra pairs joined, and whenever no atom descends,
//! a subspace step (`subspace.rs`) re-optimises W and b over the span of the atoms widened
//! by their rotation directions −G v_j and −Gᵀu_j (where the gradient would turn each
//! factor of W; measured on the benchmark: 6 → 4 iterations cold, 3–8 → 3 per point of the
//! path). It returns W's singular pairs as the atoms (so Σθ = ‖W‖_σ,1).
//!
//! A point of a regularisation path starts from the previous point's atoms and gradient
//! (G does not depend on λ1): its first step is that subspace step, from weights moved by
//! a diagonal Newton step and with only the Ritz pairs outside the atoms' spans added (the
//! atoms' own singular values sit at the previous λ1, above the new one). It also takes
//! over what the previous point computed from the same G and X: the Ritz vectors its last
//! singular-pair iteration ended with (the first iteration here starts converged), and
//! the atoms' X U, which becomes part of the subspace step's Z (`Bases::around`; only the
//! new directions are multiplied by X). Measured on the benchmark's path (10 points): the
//! same iterations and subspace evaluations, 13–19 → 7–10 singular-pair iterations per
//! point, and half the columns of X Q_u (at rank 5, 10 → 5).

use std::sync::Arc;
use std::time::Instant;

use ndarray::{concatenate, Array1, Array2, ArrayView1, Axis};

use super::multinomial::{armijo_rank_one, check_labels, loss_and_residual, row_weights, Direction, Penalties, Scores};
use super::products::Products;
use super::singular::top_singular_pair;
use super::small::{columns, thin_qr, thin_svd};
use super::subspace::{span_step, times, Bases, StepOptions};
use crate::data::{Design, DesignJob};
use crate::rng::SplitMix64;
use crate::solvers::{Monitor, Progress};
use crate::{Error, Result};

/// W = U diag(θ) Vᵀ and the intercept b, with Z = X U (the scores are Z diag(θ) Vᵀ + 1 bᵀ).
#[derive(Debug, Clone, PartialEq)]
pub struct Atoms {
    /// d × r, unit columns.
    pub u: Array2<f64>,
    /// m × r, unit columns.
    pub v: Array2<f64>,
    pub theta: Array1<f64>,
    pub b: Array1<f64>,
    /// n × r.
    pub z: Array2<f64>,
}

impl Atoms {
    /// W (d × m).
    pub fn w(&self) -> Array2<f64> {
        (&self.u * &self.theta).dot(&self.v.t())
    }

    /// S = Z diag(θ) Vᵀ + 1 bᵀ (n × m, row-major).
    pub fn scores(&self) -> Array2<f64> {
        let mut scores = (&self.z * &self.theta).dot(&self.v.t());
        scores += &self.b;
        scores.as_standard_layout().into_owned()
    }

    /// These atoms and the new ones (u, v, z = X u), all weighted by `theta`.
    fn joined(&self, (u, v, z): (&Array2<f64>, &Array2<f64>, &Array2<f64>), theta: Array1<f64>) -> Result<Atoms> {
        let join = |a: &Array2<f64>, b: &Array2<f64>| {
            concatenate(Axis(1), &[a.view(), b.view()]).map_err(|e| Error::input("atoms", e.to_string()))
        };
        Ok(Atoms { u: join(&self.u, u)?, v: join(&self.v, v)?, theta, b: self.b.clone(), z: join(&self.z, z)? })
    }

    /// The same W as its singular pairs (θ = the singular values, so Σθ = ‖W‖_σ,1, which can
    /// only lower the objective): QR of U and V, then the SVD of the small r × r core; zero
    /// singular values dropped.
    pub fn canonical<P: Products + ?Sized>(&self, x: &P) -> Result<Atoms> {
        if self.theta.is_empty() {
            return Ok(self.clone());
        }
        let ((qu, ru), (qv, rv)) = (thin_qr(self.u.view()), thin_qr(self.v.view()));
        let svd = thin_svd((&ru * &self.theta).dot(&rv.t()).view())?;
        let keep = svd.above(1e-12);
        let u = qu.dot(&columns(&svd.u, &keep));
        // Z = X U anew (one product): updating it through Ru⁻¹ would amplify rounding when
        // atoms repeat a direction (Ru nearly singular).
        let z = times(x, u.view())?;
        Ok(Atoms {
            u,
            v: qv.dot(&columns(&svd.v, &keep)),
            theta: keep.iter().map(|&j| svd.s[j]).collect(),
            b: self.b.clone(),
            z,
        })
    }
}

/// R_n and ∇R̃ at some (W, b): the loss, the residual (P − Y)/n (n × m) and
/// G = Xᵀ(P − Y)/n + 2λ2 W (d × m).
#[derive(Debug, Clone, PartialEq)]
pub struct Gradient {
    pub loss: f64,
    pub residual: Array2<f64>,
    pub g: Array2<f64>,
}

/// Why the descent stopped: the solvers' one vocabulary (never `NoProgress` here).
pub use crate::solvers::Status;

/// One iteration's record: J before the iteration's step, σ_max(−G), the atoms with θ > 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    pub iteration: usize,
    pub objective: f64,
    pub sigma: f64,
    pub rank: usize,
    pub seconds: f64,
}

/// The problem's penalties and the solver's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub penalties: Penalties,
    pub fit_intercept: bool,
    /// ε of (C1)–(C2).
    pub tol: f64,
    pub max_iter: usize,
    /// Rank-one steps between subspace steps.
    pub subspace_every: usize,
    /// Seeds the start vector of the first singular-pair iteration.
    pub seed: u64,
}

impl Options {
    /// The options of these penalties and settings, checked ([`Options::check`]).
    pub fn new(
        (trace, fro): (f64, f64),
        fit_intercept: bool,
        tol: f64,
        max_iter: usize,
        subspace_every: usize,
        seed: u64,
    ) -> Result<Self> {
        let options = Self { penalties: Penalties { trace, fro }, fit_intercept, tol, max_iter, subspace_every, seed };
        options.check().map(|()| options)
    }

    /// Every setting in its domain, named otherwise.
    pub fn check(&self) -> Result<()> {
        let Penalties { trace, fro } = self.penalties;
        if !(trace >= 0.0 && trace.is_finite()) {
            return Err(Error::param("lambda_trace", format!("must be finite and >= 0, got {trace}")));
        }
        if !(fro >= 0.0 && fro.is_finite()) {
            return Err(Error::param("lambda_fro", format!("must be finite and >= 0, got {fro}")));
        }
        if !(self.tol > 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", format!("must be finite and > 0, got {}", self.tol)));
        }
        if self.max_iter == 0 {
            return Err(Error::param("max_iter", "must be at least 1"));
        }
        if self.subspace_every == 0 {
            return Err(Error::param("subspace_every", "must be at least 1"));
        }
        Ok(())
    }
}

/// Where a fit starts: atoms (their Z recomputed when it has no rows) and, for the next
/// point of a path on the same data, ∇R̃ at them (shared with the fit it comes from: the
/// residual is n × m) with the Ritz vectors of −∇R̃ the fit found (the first singular-pair
/// iteration starts from them; ignored without the gradient).
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub atoms: Atoms,
    pub gradient: Option<Arc<Gradient>>,
    pub ritz: Vec<Vec<f64>>,
}

impl Start {
    /// A start from the atoms of a fit on any data of the same shape: U (d × r), V (m × r),
    /// their weights θ and the intercept b (checked against the problem when it runs).
    pub fn from_atoms(u: Array2<f64>, v: Array2<f64>, theta: Array1<f64>, b: Array1<f64>) -> Start {
        Start { atoms: Atoms { u, v, theta, b, z: Array2::zeros((0, 0)) }, gradient: None, ritz: Vec::new() }
    }
}

/// A finished fit: the atoms as W's singular pairs, J and R_n there, and, when converged,
/// the gradient there and its Ritz vectors, which the next point of a path starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub atoms: Atoms,
    pub objective: f64,
    pub loss: f64,
    pub n_iter: usize,
    pub status: Status,
    pub history: Vec<Record>,
    pub gradient: Option<Arc<Gradient>>,
    pub ritz: Vec<Vec<f64>>,
}

impl Fit {
    /// The start of the next point of a regularisation path on the same data: these atoms,
    /// with their Z and (when converged) the gradient there.
    pub fn next_start(&self) -> Start {
        Start { atoms: self.atoms.clone(), gradient: self.gradient.clone(), ritz: self.ritz.clone() }
    }

    /// The rank of W: its singular values above 1e-6 × the largest (smaller ones are atoms
    /// within the tolerance of zero weight).
    pub fn rank(&self) -> usize {
        let top = self.atoms.theta.iter().fold(0.0f64, |a, &b| a.max(b));
        self.atoms.theta.iter().filter(|&&t| t > 1e-6 * top).count()
    }
}

fn matrix(rows: usize, cols: usize, data: Vec<f64>, name: &'static str) -> Result<Array2<f64>> {
    Array2::from_shape_vec((rows, cols), data).map_err(|e| Error::input(name, e.to_string()))
}

/// R_n, the residual and G at the scores `s` and weights `w`.
fn gradient_at<P: Products + ?Sized>(
    x: &P,
    (labels, weights): Examples<'_>,
    s: &Array2<f64>,
    w: &Array2<f64>,
    lambda_fro: f64,
) -> Result<Gradient> {
    let (n, m) = s.dim();
    let mut residual = vec![0.0; n * m];
    let values = s.as_slice().ok_or_else(|| Error::input("scores", "must be contiguous"))?;
    let loss = loss_and_residual(&Scores::weighted(values, m, labels, weights)?, &mut residual)?;
    let g = matrix(x.n_features(), m, x.t_times(&residual, m)?, "X")? + &(w * (2.0 * lambda_fro));
    Ok(Gradient { loss, residual: matrix(n, m, residual, "residual")?, g })
}

/// Column norms of `a`.
fn column_norms(a: &Array2<f64>) -> Array1<f64> {
    a.map_axis(Axis(0), |c| c.dot(&c).sqrt())
}

/// The Ritz pairs (u_j, v_j, σ_j) of −G with σ_j > `level`: u_j = −G v_j / σ_j for the right
/// Ritz vectors v_j, the rows of `ritz`.
fn pairs_above(g: &Array2<f64>, ritz: &[Vec<f64>], level: f64) -> Result<(Array2<f64>, Array2<f64>, Array1<f64>)> {
    let m = g.ncols();
    let v = matrix(ritz.len(), m, ritz.concat(), "ritz")?.reversed_axes();
    let u = -g.dot(&v);
    let sigma = column_norms(&u);
    let above: Vec<usize> = (0..sigma.len()).filter(|&j| sigma[j] > level).collect();
    let sigma = sigma.select(Axis(0), &above);
    Ok((columns(&u, &above) / &sigma, columns(&v, &above), sigma))
}

/// The pairs of [`pairs_above`] that point outside the atoms' spans (by more than 0.1 of
/// their length on either side).
fn outside_pairs(
    atoms: &Atoms,
    g: &Array2<f64>,
    ritz: &[Vec<f64>],
    level: f64,
) -> Result<(Array2<f64>, Array2<f64>, Array1<f64>)> {
    let (u, v, sigma) = pairs_above(g, ritz, level)?;
    let outside = |a: &Array2<f64>, basis: &Array2<f64>| column_norms(&(a - &basis.dot(&basis.t().dot(a))));
    let (out_u, out_v) = (outside(&u, &atoms.u), outside(&v, &atoms.v));
    let keep: Vec<usize> = (0..sigma.len()).filter(|&j| out_u[j].max(out_v[j]) > 0.1).collect();
    Ok((columns(&u, &keep), columns(&v, &keep), sigma.select(Axis(0), &keep)))
}

/// The curvature of R̃ along each atom u_j v_jᵀ (z = X U, p the softmax probabilities):
/// (1/n) Σ_i z_ij² (Σ_c p_ic v_jc² − (Σ_c p_ic v_jc)²) + 2λ2 (the multinomial Hessian
/// diag(p) − ppᵀ in the direction v_j, per example; Σ_i c_i … with weights).
fn curvatures(
    z: &Array2<f64>,
    v: &Array2<f64>,
    p: &Array2<f64>,
    weights: Option<&[f64]>,
    lambda_fro: f64,
) -> Array1<f64> {
    let pv = p.dot(v);
    let spread = p.dot(&(v * v)) - &pv * &pv;
    let h = match weights {
        None => ((z * z) * spread).sum_axis(Axis(0)) / p.nrows() as f64,
        Some(c) => ((z * z) * spread * ArrayView1::from(c).insert_axis(Axis(1))).sum_axis(Axis(0)),
    } + 2.0 * lambda_fro;
    h.mapv(|h| h.max(f64::MIN_POSITIVE))
}

/// The softmax probabilities P from the residual (P − Y)/n (c_i (p_i − y_i) with weights;
/// a row of weight 0 has none, and gets p_i = y_i, which its weight 0 ignores).
fn probabilities(residual: &Array2<f64>, (labels, weights): Examples<'_>) -> Array2<f64> {
    let mut p = match weights {
        None => residual * residual.nrows() as f64,
        Some(c) => {
            let inverse = c.iter().map(|&c| if c > 0.0 { 1.0 / c } else { 0.0 }).collect::<Array1<f64>>();
            residual * &inverse.insert_axis(Axis(1))
        }
    };
    labels.iter().enumerate().for_each(|(i, &y)| p[[i, y as usize]] += 1.0);
    p
}

/// The start's atoms, checked against the problem's shape, with Z = X U if not given.
fn start_atoms<P: Products + ?Sized>(x: &P, m: usize, atoms: Atoms) -> Result<Atoms> {
    let (d, n, r) = (x.n_features(), x.n_rows(), atoms.theta.len());
    if atoms.u.dim() != (d, r) || atoms.v.dim() != (m, r) || atoms.b.len() != m {
        return Err(Error::input(
            "warm_start",
            format!("the start's atoms must be {d} x r and {m} x r with r weights and {m} intercepts"),
        ));
    }
    if atoms.theta.iter().any(|&t| !(t >= 0.0 && t.is_finite()))
        || atoms.u.iter().chain(atoms.v.iter()).chain(atoms.b.iter()).any(|v| !v.is_finite())
    {
        return Err(Error::input("warm_start", "the start's atoms must be finite with weights >= 0"));
    }
    if atoms.z.dim() == (n, r) {
        return Ok(atoms);
    }
    let z = times(x, atoms.u.view())?;
    Ok(Atoms { z, ..atoms })
}

/// The labels and the normalised row weights c_i of the data term (None: the plain mean).
type Examples<'a> = (&'a [u32], Option<&'a [f64]>);

/// log class priors, the intercept that fits the labels alone (weighted: the classes'
/// shares of the total weight).
fn log_priors((labels, weights): Examples<'_>, m: usize) -> Array1<f64> {
    let mut counts = Array1::<f64>::zeros(m);
    let total = labels.len() as f64;
    match weights {
        None => labels.iter().for_each(|&y| counts[y as usize] += 1.0),
        Some(c) => labels.iter().zip(c).for_each(|(&y, &c)| counts[y as usize] += c * total),
    }
    counts.mapv(|c| (c.max(0.5) / total).ln())
}

/// [`rank_one_descent`] over the classes 0..=max(labels).
pub fn fit_labels<P: Products + ?Sized, M: Monitor + ?Sized>(
    x: &P,
    labels: &[u32],
    sample_weight: Option<&[f64]>,
    options: &Options,
    start: Option<Start>,
    monitor: &mut M,
) -> Result<Fit> {
    let m = labels.iter().max().map_or(0, |&top| top as usize + 1);
    rank_one_descent(x, labels, sample_weight, m, options, start, monitor)
}

/// [`fit_labels`] as a job on any design X (through [`Rows`](super::Rows)): the labels,
/// the sample weights, the options and the start.
pub struct FitLabels<'a>(pub &'a [u32], pub Option<&'a [f64]>, pub Options, pub Option<Start>);

impl DesignJob for FitLabels<'_> {
    type Output = Fit;
    // Every product with X (on its codes when product-quantized, `Rows`) is checked
    // finite by the descent, which names X.
    const CHECKS_X_ITSELF: bool = true;
    fn run<D: Design>(self, x: &D, monitor: &mut dyn Monitor) -> Result<Fit> {
        fit_labels(&super::Rows(x), self.0, self.1, &self.2, self.3, monitor)
    }
}

/// Algorithm R1D on X and labels (< m), with the rows' `sample_weight` if given (finite,
/// ≥ 0, not all 0), from `start` (or W = 0 and b = the log class priors); see the module
/// docs. A start's gradient must be that of the same data and weights (a path's).
pub fn rank_one_descent<P: Products + ?Sized, M: Monitor + ?Sized>(
    x: &P,
    labels: &[u32],
    sample_weight: Option<&[f64]>,
    m: usize,
    options: &Options,
    start: Option<Start>,
    monitor: &mut M,
) -> Result<Fit> {
    options.check()?;
    check_labels(labels, m)?;
    let (n, d) = (x.n_rows(), x.n_features());
    if labels.len() != n {
        return Err(Error::input("y", format!("must hold one label per row of X ({n}), got {}", labels.len())));
    }
    let normalised = sample_weight.map(|w| row_weights(w, n)).transpose()?.flatten();
    let weights = normalised.as_deref();
    if options.fit_intercept {
        if let Some(c) = weights {
            // A class whose examples all weigh 0 pulls its intercept to −∞: no minimum.
            let mut class_weight = vec![0.0; m];
            labels.iter().zip(c).for_each(|(&y, &c)| class_weight[y as usize] += c);
            let present = labels.iter().fold(vec![false; m], |mut seen, &y| {
                seen[y as usize] = true;
                seen
            });
            if let Some(l) = (0..m).find(|&l| present[l] && class_weight[l] == 0.0) {
                return Err(Error::input(
                    "sample_weight",
                    format!("every example of class {l} has weight 0: its intercept would have no minimum"),
                ));
            }
        }
    }
    let examples = (labels, weights);
    let Options { penalties, fit_intercept, tol, max_iter, subspace_every, seed } = *options;
    let Penalties { trace: lambda_trace, fro: lambda_fro } = penalties;
    let (mut atoms, start_gradient, mut ritz) = match start {
        None => {
            let b = if fit_intercept { log_priors(examples, m) } else { Array1::zeros(m) };
            (
                Atoms {
                    u: Array2::zeros((d, 0)),
                    v: Array2::zeros((m, 0)),
                    theta: Array1::zeros(0),
                    b,
                    z: Array2::zeros((n, 0)),
                },
                None,
                Vec::new(),
            )
        }
        Some(Start { atoms, gradient, ritz }) => {
            let mut atoms = start_atoms(x, m, atoms)?;
            // Without an intercept the start's b (and so its gradient) does not apply.
            let gradient = if fit_intercept {
                gradient.filter(|g| g.residual.dim() == (n, m) && g.g.dim() == (d, m))
            } else {
                None
            };
            if !fit_intercept {
                atoms.b = Array1::zeros(m);
            }
            let ritz =
                if gradient.is_some() { ritz.into_iter().filter(|r| r.len() == m).collect() } else { Vec::new() };
            (atoms, gradient, ritz)
        }
    };
    let warm = start_gradient.is_some();
    // The scores; a path point given its gradient needs none before its first (subspace)
    // step, which forms them.
    let mut scores: Option<Array2<f64>> = if warm { None } else { Some(atoms.scores()) };
    let mut w = atoms.w();
    let mut rng = SplitMix64::new(seed);
    // The first singular-pair iteration starts from the start's Ritz vectors, which the
    // previous point of a path left converged on this same gradient, and a random vector.
    ritz.push((0..m).map(|_| rng.next_f64() - 0.5).collect());
    let (mut steps_since_subspace, mut status, mut history) = (0, Status::MaxIter, Vec::new());
    let mut canonical = true; // the atoms are W's singular pairs (a start is)
    let mut gradient = start_gradient;
    let started = Instant::now();
    let mut iteration = 0;
    let step_options = |gtol: f64, max_steps: usize| StepOptions { penalties, fit_intercept, gtol, max_steps };
    while iteration < max_iter {
        if monitor.should_stop() {
            status = Status::Interrupted;
            break;
        }
        iteration += 1;
        // Only the first iteration can start from a given gradient: every later one moves W.
        let current = match gradient.take() {
            Some(current) => current,
            None => Arc::new(match &scores {
                Some(s) => gradient_at(x, examples, s, &w, lambda_fro)?,
                None => gradient_at(x, examples, &atoms.scores(), &w, lambda_fro)?,
            }),
        };
        let g = &current.g;
        // A block larger than the atom count: the top singular values cluster at λ1, one per
        // atom, near the optimum (see singular.rs).
        let minus_g = g.mapv(|v| -v);
        let pair = top_singular_pair(
            minus_g.as_slice().unwrap_or(&[]),
            d,
            m,
            &ritz,
            m.min(atoms.theta.len() + 8),
            1e-10,
            1000,
        )?;
        let (sigma, u, v) = (pair.sigma, Array1::from(pair.u), Array1::from(pair.v));
        ritz = pair.ritz;
        // The atoms' rotation directions −G v_j (left) and −Gᵀu_j (right): the gradient of
        // the loss in each factor of W = U diag θ Vᵀ.
        let rotations = (minus_g.dot(&atoms.v), minus_g.t().dot(&atoms.u));
        let objective =
            lambda_trace * atoms.theta.sum() + lambda_fro * w.iter().map(|v| v * v).sum::<f64>() + current.loss;
        let atom_grad = (&atoms.u * &g.dot(&atoms.v)).sum_axis(Axis(0)) + lambda_trace;
        let grad_b = if fit_intercept { current.residual.sum_axis(Axis(0)) } else { Array1::zeros(m) };
        let c1 = sigma <= lambda_trace + tol;
        let c2 = atom_grad.iter().zip(&atoms.theta).all(|(a, &t)| t <= 0.0 || a.abs() <= tol)
            && grad_b.iter().all(|b| b.abs() <= tol);
        let rank = atoms.theta.iter().filter(|&&t| t > 0.0).count();
        let seconds = started.elapsed().as_secs_f64();
        history.push(Record { iteration, objective, sigma, rank, seconds });
        monitor.report(&Progress {
            epoch: iteration,
            primal: objective,
            dual: sigma,
            gap: sigma - lambda_trace,
            elapsed: started.elapsed(),
        });
        let rotations = (rotations.0.view(), rotations.1.view());
        if c1 && c2 {
            if canonical {
                let fit = Fit {
                    atoms,
                    objective: f64::NAN,
                    loss: f64::NAN,
                    n_iter: iteration,
                    status: Status::Converged,
                    history,
                    gradient: Some(current),
                    ritz,
                };
                return finish(x, examples, options, fit);
            }
            // (C2) on the atoms found is not (C2) on W's own singular pairs: near-parallel
            // atoms can leave a tiny singular pair that should carry no weight. Solve the
            // subspace step precisely (it returns W's singular pairs) and check again.
            let bases = Bases::of(x, (atoms.u.view(), atoms.v.view()), rotations)?;
            atoms = span_step(&atoms, &bases, examples, &step_options(tol / 10.0, 5000), monitor)?;
            (w, scores, steps_since_subspace, canonical) = (atoms.w(), Some(atoms.scores()), 0, true);
            continue;
        }
        let slope = lambda_trace - sigma;
        let mut more_pairs = false;
        let mut bases: Option<Bases> = None;
        if slope <= -tol / 2.0 && iteration == 1 && warm {
            // A warm start on a path: the atoms' singular values of −∇R̃ sit at the previous
            // λ1, above this one, so the descending Ritz pairs are mostly the atoms again.
            // Instead of re-adding them with a line search (near-copies of the atoms, which
            // then slow the subspace step), the atoms take a diagonal Newton step on their
            // weights and only the Ritz pairs outside their span join, weighted the same way;
            // the subspace step then solves from there.
            let p = probabilities(&current.residual, examples);
            let (new_u, new_v, new_sigma) = outside_pairs(&atoms, g, &ritz, lambda_trace + tol / 2.0)?;
            let found = Bases::around(x, &atoms, (new_u.view(), new_v.view()), rotations)?;
            let new_z = found.z.dot(&found.qu.t().dot(&new_u));
            let theta = &atoms.theta - &(&atom_grad / &curvatures(&atoms.z, &atoms.v, &p, weights, lambda_fro));
            let new_theta = (&new_sigma - lambda_trace) / &curvatures(&new_z, &new_v, &p, weights, lambda_fro);
            let weights = concatenate(Axis(0), &[theta.view(), new_theta.view()])
                .map_err(|e| Error::input("atoms", e.to_string()))?;
            atoms = atoms.joined((&new_u, &new_v, &new_z), weights.mapv(|t| t.max(0.0)))?;
            // To a third of the descent (a tenth for the steps below): the next iteration's
            // gradient certifies the result or refines it at the final precision (measured
            // on the benchmark: 15 → 11 evaluations per point, still 2 iterations).
            atoms = span_step(&atoms, &found, examples, &step_options((tol / 10.0).max(0.3 * -slope), 200), monitor)?;
            (w, scores, steps_since_subspace, canonical) = (atoms.w(), Some(atoms.scores()), 0, true);
            continue;
        }
        if slope <= -tol / 2.0 {
            // The top pair with an Armijo step, as in R1D, and with it every other pair of the
            // block whose singular value also exceeds λ1 (module docs); the subspace step that
            // follows weighs them all at once.
            let (ritz_u, ritz_v, ritz_sigma) = pairs_above(g, &ritz[1.min(ritz.len())..], lambda_trace + tol / 2.0)?;
            let column = |a: &Array1<f64>| a.view().insert_axis(Axis(1)).to_owned();
            let new_u = concatenate(Axis(1), &[column(&u).view(), ritz_u.view()])
                .map_err(|e| Error::input("atoms", e.to_string()))?;
            let new_v = concatenate(Axis(1), &[column(&v).view(), ritz_v.view()])
                .map_err(|e| Error::input("atoms", e.to_string()))?;
            more_pairs = !ritz_sigma.is_empty();
            let new_z = if more_pairs || steps_since_subspace + 1 >= subspace_every {
                // A subspace step follows: one pass over X gives Z of its whole basis, and
                // the new atoms' X u from it (they lie in the span).
                let found = Bases::around(x, &atoms, (new_u.view(), new_v.view()), rotations)?;
                let new_z = found.z.dot(&found.qu.t().dot(&new_u));
                bases = Some(found);
                new_z
            } else {
                times(x, new_u.view())?
            };
            let s = match scores.take() {
                Some(s) => s,
                None => atoms.scores(),
            };
            let z0 = new_z.column(0).to_owned();
            let direction =
                Direction { z: z0.as_slice().unwrap_or(&[]), v: v.as_slice().unwrap_or(&[]), u_w_v: u.dot(&w.dot(&v)) };
            let values = s.as_slice().ok_or_else(|| Error::input("scores", "must be contiguous"))?;
            let delta = armijo_rank_one(
                &Scores::weighted(values, m, labels, weights)?,
                &direction,
                penalties,
                current.loss,
                slope,
            )?
            .delta;
            // The other pairs' first weights scale the line search's by their descent.
            let weights = std::iter::once(delta)
                .chain(ritz_sigma.iter().map(|&rs| delta * (rs - lambda_trace) / (sigma - lambda_trace)))
                .collect::<Array1<f64>>();
            w = w + (&new_u * &weights).dot(&new_v.t());
            let s = s + (&new_z * &weights).dot(&new_v.t());
            let theta = concatenate(Axis(0), &[atoms.theta.view(), weights.view()])
                .map_err(|e| Error::input("atoms", e.to_string()))?;
            atoms = atoms.joined((&new_u, &new_v, &new_z), theta)?;
            scores = Some(s.as_standard_layout().into_owned());
            (steps_since_subspace, canonical) = (steps_since_subspace + 1, false);
        }
        // Unchecked weights (more pairs) always go through the subspace step.
        if slope > -tol / 2.0 || steps_since_subspace >= subspace_every || more_pairs {
            // As precise as the outer iteration needs: to tol/10 once no atom descends
            // (then (C2) is what is left), else to a tenth of the current descent.
            let last = slope > -tol / 2.0;
            let bases = match bases {
                Some(bases) => bases,
                // No step this iteration: the atoms are those the rotations were taken at.
                None => {
                    let none = (Array2::zeros((d, 0)), Array2::zeros((m, 0)));
                    Bases::around(x, &atoms, (none.0.view(), none.1.view()), rotations)?
                }
            };
            let step =
                if last { step_options(tol / 10.0, 5000) } else { step_options((tol / 10.0).max(0.1 * -slope), 200) };
            atoms = span_step(&atoms, &bases, examples, &step, monitor)?;
            (w, scores, steps_since_subspace, canonical) = (atoms.w(), Some(atoms.scores()), 0, true);
        }
    }
    let fit =
        Fit { atoms, objective: f64::NAN, loss: f64::NAN, n_iter: iteration, status, history, gradient: None, ritz };
    finish(x, examples, options, fit)
}

/// The fit's result from `fit`'s atoms, iterations, status, history and gradient: when
/// stopped early, the atoms (which may overlap) rewritten as W's singular pairs; J(W, b)
/// with weights that sum to the trace norm exactly.
fn finish<P: Products + ?Sized>(x: &P, (labels, weights): Examples<'_>, options: &Options, fit: Fit) -> Result<Fit> {
    let Fit { atoms, n_iter, status, history, gradient, ritz, .. } = fit;
    let (atoms, loss) = match &gradient {
        Some(g) => (atoms, g.loss),
        None => {
            let atoms = atoms.canonical(x)?;
            let s = atoms.scores();
            let m = s.ncols();
            let mut residual = vec![0.0; s.len()];
            let values = s.as_slice().ok_or_else(|| Error::input("scores", "must be contiguous"))?;
            let loss = loss_and_residual(&Scores::weighted(values, m, labels, weights)?, &mut residual)?;
            (atoms, loss)
        }
    };
    let Penalties { trace, fro } = options.penalties;
    let objective = trace * atoms.theta.sum() + fro * atoms.theta.iter().map(|t| t * t).sum::<f64>() + loss;
    Ok(Fit { atoms, objective, loss, n_iter, status, history, gradient, ritz })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::solvers::tracenorm::products::Rows;
    use crate::solvers::Silent;

    /// X (n × d, standard-ish entries) and labels from a rank-2 W plus Gumbel noise.
    fn problem(n: usize, d: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<u32>) {
        let mut rng = SplitMix64::new(seed);
        let mut normal = || (0..12).map(|_| rng.next_f64()).sum::<f64>() - 6.0;
        let x: Vec<f64> = (0..n * d).map(|_| normal()).collect();
        let a: Vec<f64> = (0..d * 2).map(|_| normal()).collect();
        let c: Vec<f64> = (0..2 * m).map(|_| normal()).collect();
        let mut rng = SplitMix64::new(seed + 1);
        let labels = (0..n)
            .map(|i| {
                let score = |l: usize| -> f64 {
                    let w = |j: usize| a[j * 2] * c[l] + a[j * 2 + 1] * c[m + l];
                    (0..d).map(|j| x[i * d + j] * w(j)).sum::<f64>() - (-(rng.next_f64().max(1e-300)).ln()).ln()
                };
                let scores: Vec<f64> = (0..m).map(score).collect();
                (0..m).max_by(|&p, &q| scores[p].total_cmp(&scores[q])).unwrap_or(0) as u32
            })
            .collect();
        (x, labels)
    }

    /// The largest violation of (C1) (σ_max(−G) − λ1, if positive) and of (C2) on W's
    /// singular pairs and the intercept, computed afresh from W and b.
    fn violations<P: Products>(x: &P, labels: &[u32], atoms: &Atoms, options: &Options) -> (f64, f64) {
        let w = atoms.w();
        let mut s = times(x, w.view()).unwrap() + &atoms.b;
        s = s.as_standard_layout().into_owned();
        let gradient = gradient_at(x, (labels, None), &s, &w, options.penalties.fro).unwrap();
        let g = gradient.g;
        let top = thin_svd(g.view()).unwrap().s[0];
        let lambda = options.penalties.trace;
        let svd = thin_svd(w.view()).unwrap();
        let mut c2 = if options.fit_intercept {
            gradient.residual.sum_axis(Axis(0)).iter().fold(0.0f64, |a, b| a.max(b.abs()))
        } else {
            0.0
        };
        for j in svd.above(1e-8) {
            c2 = c2.max((svd.u.column(j).dot(&g.dot(&svd.v.column(j))) + lambda).abs());
        }
        ((top - lambda).max(0.0), c2)
    }

    fn options(trace: f64, fro: f64, fit_intercept: bool, tol: f64) -> Options {
        Options { penalties: Penalties { trace, fro }, fit_intercept, tol, max_iter: 2000, subspace_every: 5, seed: 3 }
    }

    #[test]
    fn the_fit_satisfies_c1_and_c2() {
        let (n, d, m) = (120, 9, 6);
        let (data, labels) = problem(n, d, m, 1);
        let x = Rows(&DenseRows::new(&data, n, d).unwrap());
        for (trace, fro, fit_intercept) in [(0.05, 0.01, true), (0.05, 0.01, false), (0.2, 0.0, true)] {
            let opts = options(trace, fro, fit_intercept, 1e-7);
            let fit = rank_one_descent(&x, &labels, None, m, &opts, None, &mut Silent).unwrap();
            assert_eq!(fit.status, Status::Converged);
            let (c1, c2) = violations(&x, &labels, &fit.atoms, &opts);
            assert!(c1 <= 1.01e-7 && c2 <= 1.01e-7, "{trace} {fro} {fit_intercept}: {c1:e} {c2:e}");
            assert!(fit.rank() < d.min(m), "{}", fit.rank());
            // The objective reported is J at the atoms returned.
            let w = fit.atoms.w();
            let trace_norm: f64 = thin_svd(w.view()).unwrap().s.iter().sum();
            assert!(
                (fit.objective - (trace * trace_norm + fro * w.iter().map(|v| v * v).sum::<f64>() + fit.loss)).abs()
                    < 1e-12
            );
        }
    }

    #[test]
    fn a_warm_start_from_the_previous_point_of_a_path_reaches_the_cold_optimum() {
        let (n, d, m) = (150, 8, 7);
        let (data, labels) = problem(n, d, m, 5);
        let x = Rows(&DenseRows::new(&data, n, d).unwrap());
        let first = rank_one_descent(&x, &labels, None, m, &options(0.1, 1e-3, true, 1e-6), None, &mut Silent).unwrap();
        assert!(first.gradient.is_some());
        let opts = options(0.02, 1e-3, true, 1e-6);
        let start = first.next_start();
        let warm = rank_one_descent(&x, &labels, None, m, &opts, Some(start), &mut Silent).unwrap();
        let cold = rank_one_descent(&x, &labels, None, m, &opts, None, &mut Silent).unwrap();
        assert_eq!(warm.status, Status::Converged);
        let (c1, c2) = violations(&x, &labels, &warm.atoms, &opts);
        assert!(c1 <= 1.01e-6 && c2 <= 1.01e-6, "{c1:e} {c2:e}");
        assert!(
            (warm.objective - cold.objective).abs() <= 1e-6 * cold.objective,
            "{} {}",
            warm.objective,
            cold.objective
        );
        // A start without Z or gradient (an unpickled model's) works too.
        let bare = Atoms { z: Array2::zeros((0, 0)), ..first.atoms.clone() };
        let again = rank_one_descent(
            &x,
            &labels,
            None,
            m,
            &opts,
            Some(Start { atoms: bare, gradient: None, ritz: Vec::new() }),
            &mut Silent,
        )
        .unwrap();
        assert!((again.objective - cold.objective).abs() <= 1e-6 * cold.objective);
        // Bad settings and starts are named, by `Options::new` as by the descent.
        assert_eq!(Options::new((0.1, 0.0), true, 1e-6, 10, 5, 3).map(|o| o.penalties.trace), Ok(0.1));
        assert!(matches!(
            Options::new((-1.0, 0.0), true, 1e-6, 10, 5, 3),
            Err(Error::InvalidParameter { name: "lambda_trace", .. })
        ));
        let bad = Options { tol: 0.0, ..opts };
        assert!(matches!(
            rank_one_descent(&x, &labels, None, m, &bad, None, &mut Silent),
            Err(Error::InvalidParameter { name: "tol", .. })
        ));
        let wrong = Atoms { u: Array2::zeros((d + 1, first.atoms.theta.len())), ..first.atoms };
        let start = Some(Start { atoms: wrong, gradient: None, ritz: Vec::new() });
        assert!(matches!(
            rank_one_descent(&x, &labels, None, m, &opts, start, &mut Silent),
            Err(Error::InvalidInput { name: "warm_start", .. })
        ));
    }

    #[test]
    fn a_subspace_step_over_the_whole_space_solves_the_problem() {
        // With Q_u = I_d and Q_v = I_m the span is every W: the step alone must reach
        // (C1)–(C2) at its own precision, from a poor start (one atom).
        let (n, d, m) = (100, 5, 4);
        let (data, labels) = problem(n, d, m, 9);
        let x = Rows(&DenseRows::new(&data, n, d).unwrap());
        let opts = options(0.03, 0.01, true, 1e-7);
        let mut u = Array2::zeros((d, 1));
        u[[0, 0]] = 1.0;
        let mut v = Array2::zeros((m, 1));
        v[[1, 0]] = 1.0;
        let atoms =
            Atoms { z: times(&x, u.view()).unwrap(), u, v, theta: Array1::from(vec![0.5]), b: Array1::zeros(m) };
        let bases = Bases { qu: Array2::eye(d), qv: Array2::eye(m), z: times(&x, Array2::eye(d).view()).unwrap() };
        let step = StepOptions { penalties: opts.penalties, fit_intercept: true, gtol: 1e-9, max_steps: 5000 };
        let solved = span_step(&atoms, &bases, (&labels, None), &step, &mut Silent).unwrap();
        let (c1, c2) = violations(&x, &labels, &solved, &opts);
        assert!(c1 <= 1e-7 && c2 <= 1e-7, "{c1:e} {c2:e}");
        // The atoms returned are W's singular pairs, with their Z = X U.
        assert!((&solved.u.t().dot(&solved.u) - &Array2::<f64>::eye(solved.theta.len()))
            .iter()
            .all(|e| e.abs() < 1e-10));
        assert!((&times(&x, solved.u.view()).unwrap() - &solved.z).iter().all(|e| e.abs() < 1e-10));
    }
}
