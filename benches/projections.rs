//! Criterion benchmarks of the one-row kernels: every projection and the three
//! losses (value + gradient), one row at a time with a reused `Workspace`, over
//! m ∈ {100, 1000, 10⁴, 10⁵} and k ∈ {1, 5, 50} (k < m).
//!
//! Inputs are standard normal rows from a seeded generator (`common::Rng`: splitmix64 +
//! Box–Muller), so runs are reproducible without extra dependencies. Each benchmark
//! cycles through a small pool of distinct rows (so branch predictors cannot learn a
//! single row); labels (`y`) are the middle-ranked entry of each row.
//!
//! Run everything (~5–8 minutes on 2 cores):
//!     cargo bench --bench projections
//! Quick smoke run of the smallest size (the filter is a regex on the benchmark id
//! `group/function/m=…/k=…`, e.g. `topk_simplex/topk_simplex/m=1000/k=5`; kernels
//! without k use `k=-`):
//!     cargo bench --bench projections -- --warm-up-time 0.1 --measurement-time 0.2 'm=100/'
//! One kernel at one size:  cargo bench --bench projections -- 'rankmax_loss/.*/m=100000/'
//!
//! `topk_simplex_sdca`, `box_simplex_sdca`: the short rows of an SDCA step at m = 10, 25,
//! 64 (see `sdca_rows`):  cargo bench --bench projections -- _sdca

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Rng;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use toprank::losses::{rankmax_loss, softmax_loss, sparsemax_loss};
use toprank::projections::{
    bipartite_simplex, box_simplex, capped_simplex, capped_simplex_entropy, knapsack, rankmax, simplex, sparsemax,
    topk_cone, topk_simplex, Workspace,
};

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
const KS: [usize; 3] = [1, 5, 50];
/// Distinct rows cycled through per size (≤ 6.4 MB of f64 at m = 10⁵).
const POOL_ROWS: usize = 8;
const SEED: u64 = 0x746f_7072_616e_6b21;

/// One input row, its label (the index of the row's middle-ranked entry) and a label
/// set for the multi-label kernels (every 20th entry: 5 labels of 100).
struct Row {
    x: Vec<f64>,
    y: usize,
    positive: Vec<bool>,
}

fn rows(m: usize) -> Vec<Row> {
    let mut rng = Rng::new(SEED ^ (m as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    (0..POOL_ROWS)
        .map(|_| {
            let x: Vec<f64> = (0..m).map(|_| rng.normal()).collect();
            let mut order: Vec<usize> = (0..m).collect();
            order.select_nth_unstable_by(m / 2, |&a, &b| x[b].total_cmp(&x[a]));
            Row { y: order[m / 2], x, positive: (0..m).map(|i| i % 20 == 0).collect() }
        })
        .collect()
}

/// A benchmarked kernel: one row, `k`, the output buffer, the workspace. Returns a
/// scalar (a threshold or a loss) that is fed to `black_box`.
type Kernel = fn(&Row, usize, &mut [f64], &mut Workspace) -> f64;

/// Benchmarks `kernel` over the size grid; `with_k` adds the k ∈ {1, 5, 50} axis.
fn bench_kernel(c: &mut Criterion, name: &str, with_k: bool, kernel: Kernel) {
    let mut group = c.benchmark_group(name);
    for m in SIZES {
        let pool = rows(m);
        let ks: &[usize] = if with_k { &KS } else { &[0] };
        for &k in ks.iter().filter(|&&k| k < m) {
            // Kernels without k get `k=-`, so every id is `m=…/k=…` and `m=100/` selects a size.
            let id = if with_k { format!("m={m}/k={k}") } else { format!("m={m}/k=-") };
            let mut out = vec![0.0; m];
            let mut ws = Workspace::with_capacity(m);
            // Validate once outside the timing loop (a NaN here means the kernel failed).
            let check = kernel(&pool[0], k, &mut out, &mut ws);
            assert!(!check.is_nan(), "{name} {id}: kernel returned NaN");
            group.throughput(Throughput::Elements(m as u64));
            group.bench_function(BenchmarkId::new(name, id), |b| {
                let mut i = 0;
                b.iter(|| {
                    let row = &pool[i % POOL_ROWS];
                    i += 1;
                    black_box(kernel(black_box(row), k, &mut out, &mut ws))
                })
            });
        }
    }
    group.finish();
}

fn projections(c: &mut Criterion) {
    bench_kernel(c, "topk_simplex", true, |row, k, out, ws| {
        topk_simplex(&row.x, k, 1.0, 1.0, out, ws).expect("topk_simplex").lower
    });
    bench_kernel(c, "topk_cone", true, |row, k, out, ws| topk_cone(&row.x, k, 1.0, out, ws).expect("topk_cone").lower);
    bench_kernel(c, "box_simplex", true, |row, k, out, ws| {
        box_simplex(&row.x, 1.0 / k as f64, 1.0, 1.0, out, ws).expect("box_simplex").lower
    });
    bench_kernel(c, "capped_simplex", true, |row, k, out, ws| {
        capped_simplex(&row.x, k as f64, out, ws).expect("capped_simplex").lower
    });
    bench_kernel(c, "capped_simplex_entropy", true, |row, k, out, ws| {
        capped_simplex_entropy(&row.x, k as f64, out, ws).expect("capped_simplex_entropy").lower
    });
    bench_kernel(c, "bipartite_simplex", false, |row, _, out, ws| {
        bipartite_simplex(&row.x, &row.positive, 1.0, 1.0, out, ws).expect("bipartite_simplex").sum
    });
    bench_kernel(c, "sparsemax", false, |row, _, out, ws| sparsemax(&row.x, out, ws).expect("sparsemax").lower);
    bench_kernel(c, "simplex", false, |row, _, out, ws| simplex(&row.x, 1.0, false, out, ws).expect("simplex").lower);
    // Feasible for every k < m: m·0 ≤ 1 ≤ m/k.
    bench_kernel(c, "knapsack", true, |row, k, out, ws| {
        knapsack(&row.x, 0.0, 1.0 / k as f64, 1.0, out, ws).expect("knapsack").lower
    });
    bench_kernel(c, "rankmax", true, |row, k, out, ws| rankmax(&row.x, row.y, k, 1.0, out, ws).expect("rankmax").mu);
}

/// The projection of an SDCA step on a problem with few classes: m = 10, 25 (UCI
/// Letter's 26 classes minus the label), 64 entries b_j = (s_j + 1 − s_y)/kii with
/// scores s_j ~ N(0, 1), the label's s_y ~ N(1.5, 1) (usually ahead) and kii = 3, radius
/// r = 1 and bias ρ = 1 (Proposition 4); k = 1, 3, 5. A pool of 64 rows per size.
fn sdca_rows(c: &mut Criterion) {
    for (name, beta) in [("topk_simplex_sdca", false), ("box_simplex_sdca", true)] {
        let mut group = c.benchmark_group(name);
        for m in [10, 25, 64] {
            let mut rng = Rng::new(SEED ^ 0x5dca ^ m as u64);
            let pool: Vec<Vec<f64>> = (0..64)
                .map(|_| {
                    let sy = 1.5 + rng.normal();
                    (0..m).map(|_| (rng.normal() + 1.0 - sy) / 3.0).collect()
                })
                .collect();
            let mut out = vec![0.0; m];
            let mut ws = Workspace::with_capacity(m);
            for k in [1, 3, 5] {
                group.throughput(Throughput::Elements(m as u64));
                group.bench_function(BenchmarkId::new(name, format!("m={m}/k={k}")), |b| {
                    let mut i = 0;
                    b.iter(|| {
                        let row = &pool[i % pool.len()];
                        i += 1;
                        let th = if beta {
                            box_simplex(black_box(row), 1.0 / k as f64, 1.0, 1.0, &mut out, &mut ws)
                        } else {
                            topk_simplex(black_box(row), k, 1.0, 1.0, &mut out, &mut ws)
                        };
                        black_box(th.expect("projection").lower)
                    })
                });
            }
        }
        group.finish();
    }
}

fn losses(c: &mut Criterion) {
    bench_kernel(c, "rankmax_loss", true, |row, k, grad, ws| {
        rankmax_loss(&row.x, row.y, k, 1.0, grad, ws).expect("rankmax_loss")
    });
    bench_kernel(c, "softmax_loss", false, |row, _, grad, _| softmax_loss(&row.x, row.y, grad).expect("softmax_loss"));
    bench_kernel(c, "sparsemax_loss", false, |row, _, grad, ws| {
        sparsemax_loss(&row.x, row.y, grad, ws).expect("sparsemax_loss")
    });
}

criterion_group! {
    name = benches;
    // ~116 benchmarks × (0.5 s warm-up + 2 s measurement + analysis) ≈ 5–6 minutes.
    // Command-line flags (--warm-up-time, --measurement-time, --sample-size) override.
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = projections, sdca_rows, losses
}
criterion_main!(benches);
