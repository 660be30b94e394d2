//! The group step of the ranking-at-the-top solver (`solver.rs`): ties at a coupled bound.
//!
//! TopPushK's dual couples every β to Σα through the cap β_j ≤ Σα/K (7c), and Pat&Mat's
//! hinge dual, with δ maximised out, carries −(nτ/θ)·max_j β_j. At their optima several β
//! sit on that bound together (cvxpy's solutions of small problems have 2 of K = 3 at the
//! cap, or 7 β at the max). Lowering the bound needs all of them to move at once, which
//! no two-coordinate step does: the pair steps stall there with the duality gap open.
//! This step moves the tied set T together with one scanned partner, keeping Σα = Σβ:
//!   TopPushK:  α_p −Δ, each tied β −Δ/K (they stay on the cap (Σα − Δ)/K), β_l −(1 − |T|/K)Δ
//!   Pat&Mat:   each tied β −Δ, partner −|T|Δ (a positive) or +|T|Δ (an untied negative)
//! and solves the resulting 1-D problem exactly (`step.rs`) with the direction
//! e = Σ c_j σ_j φ(x_j): q = ‖e‖² from the aggregated column u = Σ c_j σ_j K_·j, g = ⟨w, e⟩.

use super::objective::Method;
use super::solver::State;
use super::step::Line;
use crate::kernels::{ColumnCache, KernelSource};

/// A candidate group step: (orientation, (partner, its coefficient), Δ, gain).
type GroupStep = (usize, Option<(usize, f64)>, f64, f64);

impl State<'_> {
    /// The β tied at a coupled bound, largest first: at the cap Σα/K (TopPushK, K ≥ 2) or
    /// at the maximum (Pat&Mat with the hinge). Empty when the bound is not coupled.
    fn tied(&self) -> Vec<usize> {
        let Some(set) = &self.betas else { return Vec::new() };
        let Some(&(top, _)) = set.iter().next_back() else { return Vec::new() };
        let level = match self.problem.method {
            Method::TopPushK { k } => self.sum_alpha / k as f64,
            Method::PatMat { .. } => f64::from_bits(top),
        };
        if level <= 0.0 {
            return Vec::new();
        }
        set.iter()
            .rev()
            .take_while(|&&(b, _)| f64::from_bits(b) >= level * (1.0 - 1e-12))
            .map(|&(_, j)| j as usize)
            .collect()
    }

    /// A group step for ties at a coupled bound, which no two-coordinate step can leave:
    /// the tied β move together, by c_T·Δ each, with one partner l scanned over all
    /// examples (TopPushK also moves one positive p, chosen by its dual gradient), with
    /// coefficients that keep Σα = Σβ:
    ///   TopPushK:  α_p −Δ, tied −Δ/K (they stay on the cap (Σα − Δ)/K), β_l −(1 − |T|/K)Δ
    ///   Pat&Mat:   tied −Δ, partner −|T|Δ (a positive) or +|T|Δ (an untied negative)
    /// The 1-D problem is that of `step.rs` with the direction e = Σ c_j σ_j φ(x_j):
    /// q = ‖e‖² from the aggregated column u = Σ c_j σ_j K_·j, g = ⟨w, e⟩. Costs |T| + 1
    /// kernel columns; used only when the pair steps stall. Returns whether it moved.
    pub(super) fn group_iterate<S: KernelSource + ?Sized>(&mut self, cache: &mut ColumnCache, kernel: &S) -> bool {
        let tied = self.tied();
        if tied.is_empty() {
            return false;
        }
        let n = self.v.len();
        let mut in_group = vec![false; n];
        tied.iter().for_each(|&j| in_group[j] = true);
        let t = tied.len() as f64;
        let sign = |j: usize| if self.positive[j] { 1.0 } else { -1.0 };
        // The largest untied β (two of them, so one partner can be excluded).
        let untied: Vec<(f64, usize)> = self
            .betas
            .as_ref()
            .map(|set| {
                set.iter()
                    .rev()
                    .filter(|&&(_, j)| !in_group[j as usize])
                    .take(2)
                    .map(|&(b, j)| (f64::from_bits(b), j as usize))
                    .collect()
            })
            .unwrap_or_default();
        let largest_untied = |skip: usize| untied.iter().find(|&&(_, j)| j != skip).map_or(0.0, |&(b, _)| b);
        let terms = [self.term(false), self.term(true)];
        let gradient = |j: usize| {
            -sign(j) * self.f[j] + {
                let term = terms[usize::from(self.positive[j])];
                term.c1 - 2.0 * term.c2 * self.v[j]
            }
        };
        let mut orientations: Vec<Vec<(usize, f64)>> = Vec::new();
        let base: Vec<(usize, f64)> = match self.problem.method {
            Method::TopPushK { k } => tied.iter().map(|&j| (j, -1.0 / k as f64)).collect(),
            Method::PatMat { .. } => tied.iter().map(|&j| (j, -1.0)).collect(),
        };
        if let Method::TopPushK { .. } = self.problem.method {
            // α_p goes down for Δ > 0 (best: smallest gradient) or up for Δ < 0 (largest).
            let cap = terms[1].cap;
            let down = (0..n)
                .filter(|&j| self.positive[j] && self.v[j] > 0.0)
                .min_by(|&a, &b| gradient(a).total_cmp(&gradient(b)));
            let up = (0..n)
                .filter(|&j| self.positive[j] && self.v[j] < cap)
                .max_by(|&a, &b| gradient(a).total_cmp(&gradient(b)));
            let up = up.filter(|&p| Some(p) != down);
            for p in [down, up].into_iter().flatten() {
                let mut members = base.clone();
                members.push((p, -1.0));
                orientations.push(members);
            }
        } else {
            orientations.push(base);
        }
        let mut best: Option<GroupStep> = None;
        let mut columns: Vec<Vec<f64>> = Vec::with_capacity(orientations.len());
        for (o, members) in orientations.iter().enumerate() {
            let mut u = vec![0.0; n];
            for &(j, c) in members {
                let col = cache.get(j, kernel);
                let coef = c * sign(j);
                u.iter_mut().zip(col).for_each(|(ui, &kij)| *ui += coef * kij);
            }
            let ee: f64 = members.iter().map(|&(j, c)| c * sign(j) * u[j]).sum();
            let wg: f64 = members.iter().map(|&(j, c)| c * sign(j) * self.f[j]).sum();
            let mut line = Line::new(ee, wg);
            for &(j, c) in members {
                let mut term = terms[usize::from(self.positive[j])];
                if !self.positive[j] {
                    // Tied β stay on their coupled bound by construction.
                    term.cap = f64::INFINITY;
                }
                line.add(term, self.v[j], c);
            }
            let mass_c = self.mass / self.problem.scale;
            let top_tied = self.v[tied[0]];
            let mut consider = |partner: Option<(usize, f64)>, line: Line| {
                let l = partner.map(|(l, _)| l);
                let step = match self.problem.method {
                    Method::TopPushK { k } => {
                        let kf = k as f64;
                        let mut line = line;
                        // Every untied β stays ≤ (Σα − Δ)/K.
                        line.bound(f64::NEG_INFINITY, self.sum_alpha - kf * largest_untied(l.unwrap_or(usize::MAX)));
                        if let Some(l) = l {
                            let slack = 1.0 - (t + 1.0) / kf;
                            if slack > 0.0 {
                                line.bound((self.v[l] - self.sum_alpha / kf) / slack, f64::INFINITY);
                            }
                        }
                        line.solve()
                    }
                    Method::PatMat { .. } => {
                        let mut pieces = [(top_tied, -1.0), (largest_untied(l.unwrap_or(usize::MAX)), 0.0), (0.0, 0.0)];
                        let len = match l {
                            Some(l) if !self.positive[l] => {
                                pieces[2] = (self.v[l], t);
                                3
                            }
                            _ => 2,
                        };
                        line.solve_with_max(mass_c, &pieces[..len])
                    }
                };
                if let Some((delta, gain)) = step {
                    if best.is_none_or(|(_, _, _, g)| gain > g) {
                        best = Some((o, partner, delta, gain));
                    }
                }
            };
            let partner_coef = |l: usize| -> Option<f64> {
                if in_group[l] {
                    return None;
                }
                match self.problem.method {
                    Method::TopPushK { k } => (!self.positive[l] && t < k as f64).then(|| -(1.0 - t / k as f64)),
                    Method::PatMat { .. } => Some(if self.positive[l] { -t } else { t }),
                }
            };
            if matches!(self.problem.method, Method::TopPushK { k } if t >= k as f64) {
                consider(None, line);
            }
            for (l, &ul) in u.iter().enumerate() {
                let Some(cl) = partner_coef(l) else { continue };
                let mut with_l = line;
                with_l.a += 2.0 * cl * sign(l) * ul + cl * cl * self.diag[l];
                with_l.b += cl * sign(l) * self.f[l];
                with_l.add(terms[usize::from(self.positive[l])], self.v[l], cl);
                consider(Some((l, cl)), with_l);
            }
            columns.push(u);
        }
        let Some((o, partner, delta, _)) = best else { return false };
        let mut moves = orientations.swap_remove(o);
        let mut u = columns.swap_remove(o);
        if let Some((l, cl)) = partner {
            let col = cache.get(l, kernel);
            let coef = cl * sign(l);
            u.iter_mut().zip(col).for_each(|(ui, &kij)| *ui += coef * kij);
            moves.push((l, cl));
        }
        self.f.iter_mut().zip(&u).for_each(|(fi, &ui)| *fi += delta * ui);
        for (j, c) in moves {
            self.set(j, self.v[j] + c * delta);
        }
        true
    }
}
