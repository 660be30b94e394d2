//! Trace-norm regularised multinomial logistic regression by rank-one descent
//! (Harchaoui, Douze, Paulin, Dudik, Malick: *Large-scale image classification with
//! trace-norm regularization*, CVPR 2012).
//!
//! Problem (4): min_W J(W) = λ1 ‖W‖_σ,1 + λ2 ‖W‖²_F + R_n(W) (+ an unpenalised intercept),
//! reframed (7) over the weights θ ≥ 0 of rank-one atoms u vᵀ (‖u‖ = ‖v‖ = 1,
//! Proposition 1): I(θ) = λ1 Σ θ_j + R̃_n(W_θ), R̃_n = λ2‖W‖²_F + R_n.
//! ε-optimality (C1)–(C2): ‖∇R̃_n(W)‖_σ,∞ ≤ λ1 + ε (no atom descends faster than ε), and
//! |⟨∇R̃_n(W), u_j v_jᵀ⟩ + λ1| ≤ ε for every atom in the support (and ∇_b = 0).
//!
//! Algorithm R1D itself, its outer loop and stopping rules, is [`descent`]; the pieces it
//! calls each have their own file: the products with X ([`products`]), the loss, its
//! residual and the rank-one line search ([`multinomial`]), the top singular pair
//! ([`singular`]), the subspace step over the span of the atoms ([`subspace`], a superset
//! of the paper's (8)) with its L-BFGS ([`lbfgs`]), and the small dense factorisations,
//! from `faer` ([`small`]).

pub mod descent;
pub mod lbfgs;
pub mod multinomial;
pub mod products;
pub mod singular;
pub mod small;
pub mod subspace;

pub use descent::{fit_labels, rank_one_descent, Atoms, Fit, FitLabels, Gradient, Options, Record, Start, Status};
pub use multinomial::{armijo_rank_one, loss, loss_and_residual, Direction, LineStep, Penalties, Scores};
pub use products::{x_times, xt_times, Products, Rows};
pub use singular::{top_singular_pair, SingularPair};
pub use subspace::{span_objective, span_step, Bases, Span, StepOptions};
