//! Criterion benchmarks of serial Prox-SDCA on a seeded synthetic problem: one epoch
//! (with the duality-gap check that ends every `solve`) and one gap evaluation alone,
//! for the top-k hinge α with k = 1 (Crammer–Singer), C = 1.
//!
//! Problem: n = 5000 examples, d = 256 features, m = 100 classes; x_i = μ_{y_i} + 5·ε_i
//! with class centres μ_c ~ N(0, I) and noise ε_i ~ N(0, I), scaled so that ‖x‖ ≈ 1.
//! * `dense_f64`: the rows as a dense row-major f64 matrix;
//! * `csr_f64_1pct`: the same construction with each entry kept with probability 1%
//!   (at least one per row), as a CSR matrix with i32 indices, rescaled so ‖x‖ ≈ 1.
//!
//! Both start from a warm iterate (5 serial epochs from zero), so the timed epoch sees
//! a realistic mix of changing and unchanged dual rows. `epoch+gap` runs
//! `solve(max_epochs = 1, check_every = 1, shrinking = false)`: a full pass over all n
//! examples plus the final gap evaluation, so one epoch ≈ `epoch+gap` − `gap`. `gap`
//! is `objectives` on the same iterate. Everything runs on a one-thread rayon pool.
//!
//! Results go to `<target>/criterion-sdca` (not `target/criterion`, whose contents
//! `benches/compare/projections.py` tabulates as per-row projection timings) unless
//! `CRITERION_HOME` is set. About 30 s in all:
//!     cargo bench --bench sdca
//! One case:  cargo bench --bench sdca -- 'dense_f64/gap'
//!
//! `small_step`: one serial SDCA step (`sdca_step`: the scores, the exact step with its
//! top-k simplex projection, the rank-one update of W) of the top-k hinge α at m + 1
//! classes, so that the projected row has m = 10, 25 (UCI Letter: 26 classes), 64
//! entries, k = 1 and 5, C = 1, on Letter-like short rows: n = 2000 examples of d = 16
//! features, x_i = μ_{y_i} + ε_i with μ_c ~ N(0, I), ε_i ~ N(0, I), scaled by 1/3 (‖x‖²
//! ≈ 3.5, Letter's features in [−1, 1] give 3.1). From the iterate of 10 serial epochs;
//! each call steps the next example of a fixed shuffled order (the solve goes on, near
//! its optimum).
//!
//! `multilabel_step`: one exact step of the multi-label hinge and softmax losses at
//! m = 100 (the benchmark size) with 5 labels, on 256 seeded score rows
//! q ~ N(0, 1) (labels +1), kii = 1, c = 1, from a = 0; and the hinge's step over the
//! ~11 classes class shrinking leaves it there (its labels and 6 others).

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Rng;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use toprank::data::{CsrRows, DenseRows, Design};
use toprank::losses::TopKVariant;
use toprank::solvers::topk_svm::{
    objectives, sdca_step, solve, ActiveSet, Examples, LinearModel, LossWorkspace, MultiLabelHinge, MultiLabelSoftmax,
    SdcaLoss, SdcaOptions, StepScratch, TopKHinge,
};
use toprank::solvers::Silent;

const N: usize = 5000;
const D: usize = 256;
const M: usize = 100;
const SIGMA: f64 = 5.0;
const DENSITY: f64 = 0.01;
const WARM_EPOCHS: usize = 5;
const SEED: u64 = 0x7364_6361_2d62_656e;

struct Problem {
    dense: Vec<f64>,
    indptr: Vec<i32>,
    indices: Vec<i32>,
    values: Vec<f64>,
    y: Vec<usize>,
    c: Vec<f64>,
}

fn problem() -> Problem {
    let mut rng = Rng::new(SEED);
    let centres: Vec<f64> = (0..M * D).map(|_| rng.normal()).collect();
    let y: Vec<usize> = (0..N).map(|_| rng.below(M)).collect();
    let scale = 1.0 / (D as f64 * (1.0 + SIGMA * SIGMA)).sqrt();
    let sparse_scale = scale / DENSITY.sqrt();
    let mut dense = Vec::with_capacity(N * D);
    let (mut indptr, mut indices, mut values) = (vec![0i32], Vec::new(), Vec::new());
    for &yi in &y {
        let forced = rng.below(D);
        for j in 0..D {
            let v = centres[yi * D + j] + SIGMA * rng.normal();
            dense.push(v * scale);
            if j == forced || rng.uniform() <= DENSITY {
                indices.push(j as i32);
                values.push(v * sparse_scale);
            }
        }
        indptr.push(indices.len() as i32);
    }
    Problem { dense, indptr, indices, values, y, c: vec![1.0; N] }
}

fn options(max_epochs: usize) -> SdcaOptions {
    SdcaOptions { tol: 1e-12, max_epochs, check_every: max_epochs, seed: 42, shrinking: false }
}

/// Benchmarks `epoch+gap` and `gap` for one design matrix, from a warm iterate.
fn bench_design<X: Design>(c: &mut Criterion, name: &str, x: &X, ex: &Examples) {
    let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
    let mut model = LinearModel::new(x, M, None);
    let mut a = vec![0.0; N * M];
    solve(&mut model, &loss, ex, &mut a, &options(WARM_EPOCHS), &mut Silent).expect("warm-up solve");
    let w0 = model.weights().to_vec();

    let mut group = c.benchmark_group("sdca");
    group.bench_function(format!("{name}/epoch+gap"), |b| {
        b.iter_batched(
            || {
                let mut m = LinearModel::new(x, M, None);
                m.weights_mut().copy_from_slice(&w0);
                (m, a.clone())
            },
            |(mut m, mut a)| {
                let report = solve(&mut m, &loss, ex, &mut a, &options(1), &mut Silent).expect("solve");
                black_box(report.objectives.primal);
                (m, a)
            },
            BatchSize::LargeInput,
        )
    });
    let mut active = ActiveSet::new(N);
    group.bench_function(format!("{name}/gap"), |b| {
        b.iter(|| black_box(objectives(&model, &loss, ex, &a, &mut active, false, None).expect("objectives")))
    });
    group.finish();
}

fn bench_sdca(c: &mut Criterion) {
    let p = problem();
    let ex = Examples::new(&p.y, &p.c);
    // Serial: the gap evaluation would otherwise use every core. (An error only means
    // the global pool already exists.)
    let _ = rayon::ThreadPoolBuilder::new().num_threads(1).build_global();
    let dense = DenseRows::new(&p.dense, N, D).expect("dense design");
    bench_design(c, "dense_f64", &dense, &ex);
    let csr = CsrRows::new(&p.indptr, &p.indices, &p.values, D).expect("csr design");
    bench_design(c, "csr_f64_1pct", &csr, &ex);
}

fn bench_small_step(c: &mut Criterion) {
    const N_SMALL: usize = 2000;
    const D_SMALL: usize = 16;
    let mut group = c.benchmark_group("small_step");
    for m in [10, 25, 64] {
        let classes = m + 1;
        let mut rng = Rng::new(SEED ^ 2 ^ m as u64);
        let centres: Vec<f64> = (0..classes * D_SMALL).map(|_| rng.normal()).collect();
        let y: Vec<usize> = (0..N_SMALL).map(|_| rng.below(classes)).collect();
        let x: Vec<f64> = y
            .iter()
            .flat_map(|&yi| (0..D_SMALL).map(move |j| yi * D_SMALL + j))
            .map(|t| (centres[t] + rng.normal()) / 3.0)
            .collect();
        let cs = vec![1.0; N_SMALL];
        let ex = Examples::new(&y, &cs);
        let rows = DenseRows::new(&x, N_SMALL, D_SMALL).expect("dense design");
        let all: Vec<u32> = (0..classes as u32).collect();
        let mut order: Vec<usize> = (0..N_SMALL).collect();
        for i in (1..N_SMALL).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for k in [1, 5] {
            let loss = TopKHinge { k, variant: TopKVariant::Alpha, smoothing: 0.0 };
            let mut model = LinearModel::new(&rows, classes, None);
            let mut a = vec![0.0; N_SMALL * classes];
            solve(&mut model, &loss, &ex, &mut a, &options(10), &mut Silent).expect("warm-up solve");
            let mut scratch = StepScratch::new(classes);
            let mut next = 0;
            group.bench_function(format!("alpha_m{m}_k{k}"), |b| {
                b.iter(|| {
                    let i = order[next % N_SMALL];
                    next += 1;
                    sdca_step(&mut model, &loss, &ex, i, &all, &mut a, &mut scratch).expect("step");
                })
            });
        }
    }
    group.finish();
}

/// One step per row of `rows` (row-major, `m` scores each) with the labels 0..5.
fn steps<L: SdcaLoss>(loss: &L, rows: &[f64], m: usize, ws: &mut LossWorkspace, a: &mut [f64]) -> f64 {
    let labels = [0, 1, 2, 3, 4];
    rows.chunks_exact(m).fold(0.0, |acc, q| {
        a[..m].fill(0.0);
        loss.update(q, 1.0, &labels, 1.0, &mut a[..m], ws).expect("step");
        acc + a[0]
    })
}

fn bench_multilabel_step(c: &mut Criterion) {
    const ROWS: usize = 256;
    let mut rng = Rng::new(SEED ^ 1);
    let mut group = c.benchmark_group("multilabel_step");
    for m in [M, 11] {
        let rows: Vec<f64> = (0..ROWS * m).map(|t| rng.normal() + if t % m < 5 { 1.0 } else { 0.0 }).collect();
        let (mut ws, mut a) = (LossWorkspace::new(), vec![0.0; m]);
        let hinge = MultiLabelHinge { smoothing: 0.0 };
        group.bench_function(format!("hinge_m{m}_x{ROWS}"), |b| {
            b.iter(|| black_box(steps(&hinge, &rows, m, &mut ws, &mut a)))
        });
        if m == M {
            group.bench_function(format!("softmax_m{m}_x{ROWS}"), |b| {
                b.iter(|| black_box(steps(&MultiLabelSoftmax, &rows, m, &mut ws, &mut a)))
            });
        }
    }
    group.finish();
}

fn config() -> Criterion {
    let c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    common::with_output_dir(c, "criterion-sdca")
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_sdca, bench_small_step, bench_multilabel_step
}
criterion_main!(benches);
