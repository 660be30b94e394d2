//! The fast projections against independent references written from the papers:
//! Lapin et al.'s exhaustive partition scan (Lemma 3, eq. (7)–(8)) for the top-k cone,
//! and bisection on the threshold (to machine precision) for the knapsack-type sets.

use toprank::projections::{box_simplex, capped_simplex, knapsack, simplex, topk_cone, topk_simplex, Workspace};

/// splitmix64: a tiny seeded generator, so the tests need no extra crates.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// A row with ties (values on a coarse grid half of the time) and a random scale.
    fn row(&mut self, m: usize) -> Vec<f64> {
        let coarse = self.below(2) == 0;
        let scale = 10f64.powf(-8.0 + 14.0 * self.uniform());
        (0..m)
            .map(|_| {
                let v = 4.0 * self.uniform() - 2.0;
                scale * if coarse { (v * 2.0).round() / 2.0 } else { v }
            })
            .collect()
    }
}

/// Lemma 3 with the paper's exhaustive search over (|U|, |U|+|M|) — O(k·m) per row.
fn cone_reference(a: &[f64], k: usize, rho: f64) -> Vec<f64> {
    let m = a.len();
    let mut d = a.to_vec();
    d.sort_by(|x, y| y.total_cmp(x));
    let scale = d.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    let tol = 1e-9 * scale;
    let kf = k as f64;
    let clip = |t: f64, u: f64| a.iter().map(|&v| (v - t).clamp(0.0, u)).collect::<Vec<_>>();
    let top_k: f64 = d[..k].iter().sum();
    if top_k <= 0.0 {
        return vec![0.0; m];
    }
    // Case 2: U = top k, M = ∅.
    let u = top_k / (kf + rho * kf * kf);
    let next = if k < m { d[k] } else { f64::NEG_INFINITY };
    if d[k - 1] - u >= next - tol {
        return clip(d[k - 1] - u, u);
    }
    for nu in 0..k {
        for nj in k.max(nu + 1)..=m {
            let nm = (nj - nu) as f64;
            let su: f64 = d[..nu].iter().sum();
            let sm: f64 = d[nu..nj].iter().sum();
            let nuf = nu as f64;
            let den = (kf - nuf).powi(2) + (nuf + rho * kf * kf) * nm;
            let u = (nm * su + (kf - nuf) * sm) / den;
            let t_prime = (nuf * (1.0 + rho * kf) * sm - (kf - nuf + rho * kf * nm) * su) / den;
            let t = t_prime + rho * u * kf;
            let max_l = if nj < m { d[nj] } else { f64::NEG_INFINITY };
            let min_u = if nu > 0 { d[nu - 1] } else { f64::INFINITY };
            if max_l <= t + tol && t <= d[nj - 1] + tol && d[nu] <= t + u + tol && t + u <= min_u + tol && u > 0.0 {
                return clip(t, u);
            }
        }
    }
    panic!("reference found no partition for {a:?}, k = {k}, rho = {rho}");
}

/// Bisection for t with Σ clip(a − t, lo, hi) = r (a decreasing function of t).
fn knapsack_reference(a: &[f64], lo: f64, hi: f64, r: f64) -> Vec<f64> {
    let f = |t: f64| a.iter().map(|&v| (v - t).clamp(lo, hi)).sum::<f64>();
    let (mut left, mut right) = (
        a.iter().fold(f64::INFINITY, |s, &v| s.min(v)) - hi.abs() - lo.abs() - 1.0,
        a.iter().fold(f64::NEG_INFINITY, |s, &v| s.max(v)) + hi.abs() + lo.abs() + 1.0,
    );
    for _ in 0..300 {
        let mid = 0.5 * (left + right);
        if f(mid) > r {
            left = mid;
        } else {
            right = mid;
        }
    }
    let t = 0.5 * (left + right);
    a.iter().map(|&v| (v - t).clamp(lo, hi)).collect()
}

fn assert_close(got: &[f64], want: &[f64], scale: f64, what: &str) {
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-9 * scale.max(f64::MIN_POSITIVE), "{what}: got {got:?}, want {want:?}");
    }
}

/// The scale of a row (1 for an all-zero row).
fn max_abs(x: &[f64]) -> f64 {
    let s = x.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    if s > 0.0 {
        s
    } else {
        1.0
    }
}

#[test]
fn topk_cone_matches_exhaustive_partition_search() {
    let mut rng = Rng(1);
    let mut ws = Workspace::new();
    for _ in 0..3000 {
        let m = 1 + rng.below(40);
        let k = 1 + rng.below(m);
        let rho = [0.0, 0.5, 1.0][rng.below(3)];
        let x = rng.row(m);
        let mut out = vec![0.0; m];
        topk_cone(&x, k, rho, &mut out, &mut ws).unwrap();
        assert_close(&out, &cone_reference(&x, k, rho), max_abs(&x), &format!("cone k={k} rho={rho} x={x:?}"));
    }
}

#[test]
fn topk_simplex_is_cone_or_knapsack() {
    let mut rng = Rng(2);
    let mut ws = Workspace::new();
    for _ in 0..3000 {
        let m = 1 + rng.below(40);
        let k = 1 + rng.below(m);
        let rho = [0.0, 0.5, 1.0][rng.below(3)];
        let x = rng.row(m);
        let cone = cone_reference(&x, k, rho);
        let cone_sum: f64 = cone.iter().sum();
        // Radii below, at and beyond the cone solution's sum.
        let r = match rng.below(3) {
            0 => cone_sum * 0.5,
            1 => cone_sum,
            _ => cone_sum * 2.0 + max_abs(&x),
        };
        if r <= 0.0 {
            continue;
        }
        let want = if cone_sum <= r { cone } else { knapsack_reference(&x, 0.0, r / k as f64, r) };
        let mut out = vec![0.0; m];
        if let Err(error) = topk_simplex(&x, k, r, rho, &mut out, &mut ws) {
            // A radius below float64's resolution of x (r = the cone's sum when that sum
            // is rounding noise): the output cannot be certified to sum to r, so it raises.
            assert!(r <= 1e-12 * max_abs(&x), "{error:?} x={x:?} k={k} r={r:e} rho={rho}");
            continue;
        }
        assert_close(&out, &want, max_abs(&x).max(r), &format!("simplex k={k} r={r} rho={rho} x={x:?}"));
    }
}

#[test]
fn knapsack_family_matches_bisection() {
    let mut rng = Rng(3);
    let mut ws = Workspace::new();
    for _ in 0..3000 {
        let m = 1 + rng.below(40);
        let x = rng.row(m);
        let s = max_abs(&x);
        let mut out = vec![0.0; m];
        // General knapsack with lo < hi and a feasible r.
        let lo = s * (rng.uniform() - 0.8);
        let hi = lo + s * (0.01 + rng.uniform());
        let r = m as f64 * (lo + (hi - lo) * rng.uniform());
        knapsack(&x, lo, hi, r, &mut out, &mut ws).unwrap();
        assert_close(&out, &knapsack_reference(&x, lo, hi, r), s, "knapsack");
        // Simplex (equality and inequality).
        let r = s * (0.01 + 3.0 * rng.uniform());
        simplex(&x, r, false, &mut out, &mut ws).unwrap();
        assert_close(&out, &knapsack_reference(&x, 0.0, r + 4.0 * s, r), s, "simplex");
        // Capped simplex.
        let k = (1 + rng.below(m)) as f64 - 0.5 * rng.uniform();
        capped_simplex(&x, k, &mut out, &mut ws).unwrap();
        assert_close(&out, &knapsack_reference(&x, 0.0, 1.0, k), s.max(1.0), "capped simplex");
    }
}

#[test]
fn box_simplex_with_bias_matches_bisection() {
    // λ = 0: t = ρ Σ clip(x − t, 0, hi); otherwise the knapsack with Σ = r.
    let mut rng = Rng(4);
    let mut ws = Workspace::new();
    for _ in 0..3000 {
        let m = 1 + rng.below(40);
        let x = rng.row(m);
        let s = max_abs(&x);
        let hi = s * (0.05 + rng.uniform());
        let r = s * (0.05 + 2.0 * rng.uniform());
        let rho = [0.0, 0.5, 1.0][rng.below(3)];
        let g = |t: f64| t - rho * x.iter().map(|&v| (v - t).clamp(0.0, hi)).sum::<f64>();
        let (mut left, mut right) = (0.0, 2.0 * s + 1.0);
        for _ in 0..300 {
            let mid = 0.5 * (left + right);
            if g(mid) < 0.0 {
                left = mid;
            } else {
                right = mid;
            }
        }
        let t0 = if rho > 0.0 { 0.5 * (left + right) } else { 0.0 };
        let free: Vec<f64> = x.iter().map(|&v| (v - t0).clamp(0.0, hi)).collect();
        let want = if free.iter().sum::<f64>() <= r { free } else { knapsack_reference(&x, 0.0, hi, r) };
        let mut out = vec![0.0; m];
        box_simplex(&x, hi, r, rho, &mut out, &mut ws).unwrap();
        assert_close(&out, &want, s, &format!("box simplex hi={hi} r={r} rho={rho} x={x:?}"));
    }
}

#[test]
fn non_finite_rows_terminate() {
    // The kernels assume finite input (the bindings check), but must never hang or
    // panic on NaN or infinity: they return something or an error.
    let mut ws = Workspace::new();
    let mut out = vec![0.0; 4];
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let x = [0.5, bad, -0.2, 0.1];
        let _ = knapsack(&x, 0.0, 1.0, 1.5, &mut out, &mut ws);
        let _ = simplex(&x, 1.0, false, &mut out, &mut ws);
        let _ = capped_simplex(&x, 2.0, &mut out, &mut ws);
        let _ = topk_cone(&x, 2, 1.0, &mut out, &mut ws);
        let _ = topk_simplex(&x, 2, 1.0, 1.0, &mut out, &mut ws);
        let _ = box_simplex(&x, 0.5, 1.0, 1.0, &mut out, &mut ws);
    }
}
