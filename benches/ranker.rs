//! Criterion benchmarks of one minibatch gradient of the factorised ranker
//! (`add_data_gradient`: H = X_B U, the scores, the per-example losses, ∂V, ∂b, ∂H, ∂U),
//! per loss, at the label counts of MovieLens 100K and 20M.
//!
//! Problem: a minibatch of 256 one-hot users (CSR), r = 64, float32 parameters drawn
//! N(0, 0.1²), each user with 100 positive labels drawn with a popularity skew
//! (label j with weight 1/(j+10)), so the Rankmax sweep sees realistic threshold counts.
//! Everything runs on a one-thread rayon pool; the Python comparison
//! (`benches/compare/ranker.py`) measures whole epochs and the 2-thread speed-up.
//!
//! Results go to `<target>/criterion-ranker` unless `CRITERION_HOME` is set:
//!     cargo bench --bench ranker
//! One case:  cargo bench --bench ranker -- 'rankmax/26744'

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Rng;
use criterion::{criterion_group, criterion_main, Criterion};
use toprank::data::CsrRows;
use toprank::solvers::ranker::{add_data_gradient, LabelLoss, Labels, Scratch, Shape};

const BATCH: usize = 256;
const COMPONENTS: usize = 64;
const PER_USER: usize = 100;
const SEED: u64 = 0x7261_6e6b_6572;

fn skewed_labels(rng: &mut Rng, n: usize) -> (Vec<usize>, Vec<u32>) {
    // Inverse-CDF sampling of weights 1/(j + 10) by bisection on the cumulative sums.
    let cumulative: Vec<f64> = (0..n)
        .scan(0.0, |acc, j| {
            *acc += 1.0 / (j as f64 + 10.0);
            Some(*acc)
        })
        .collect();
    let total = cumulative[n - 1];
    let (mut indptr, mut indices) = (vec![0usize], Vec::new());
    for _ in 0..BATCH {
        let mut row: Vec<u32> = Vec::with_capacity(PER_USER);
        while row.len() < PER_USER {
            let u = rng.uniform() * total;
            let j = cumulative.partition_point(|&c| c < u).min(n - 1) as u32;
            if !row.contains(&j) {
                row.push(j);
            }
        }
        row.sort_unstable();
        indices.extend(row);
        indptr.push(indices.len());
    }
    (indptr, indices)
}

fn bench_ranker(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
    let mut group = c.benchmark_group("ranker_minibatch");
    for n in [1682usize, 26_744] {
        let mut rng = Rng::new(SEED ^ n as u64);
        let shape = Shape::new(BATCH, n, COMPONENTS).expect("shape");
        let theta: Vec<f32> = (0..shape.parameters()).map(|_| (0.1 * rng.normal()) as f32).collect();
        let indptr: Vec<i32> = (0..=BATCH as i32).collect();
        let indices: Vec<i32> = (0..BATCH as i32).collect();
        let values = vec![1.0f32; BATCH];
        let x = CsrRows::new(&indptr, &indices, &values, BATCH).expect("one-hot users");
        let (label_ptr, label_idx) = skewed_labels(&mut rng, n);
        let labels = Labels::new(&label_ptr, &label_idx, BATCH, n).expect("labels");
        let rows: Vec<usize> = (0..BATCH).collect();
        let mut grad = vec![0.0f32; shape.parameters()];
        let mut scratch = Scratch::default();
        for (name, loss) in [
            ("rankmax", LabelLoss::Rankmax { k: 1, eta: 1.0 }),
            ("softmax", LabelLoss::Softmax),
            ("sparsemax", LabelLoss::Sparsemax),
        ] {
            group.bench_function(format!("{name}/{n}"), |b| {
                b.iter(|| {
                    pool.install(|| {
                        grad.iter_mut().for_each(|g| *g = 0.0);
                        let value = add_data_gradient(&x, &labels, &rows, shape, &theta, loss, &mut grad, &mut scratch);
                        black_box(value.expect("gradient"))
                    })
                })
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
    common::with_output_dir(c, "criterion-ranker")
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_ranker
}
criterion_main!(benches);
