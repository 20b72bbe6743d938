//! Greedy garbage collection's page migrations per out-of-place write as a function of
//! a region's utilisation u (valid pages over the flash pages in circulation).
//!
//! Under uniformly random page overwrites and greedy (or FIFO) victim choice with many
//! pages per block, the valid share X₀ of the block GC cleans satisfies
//! X₀ = exp(−α (1 − X₀)) with α = 1/u, whose root below 1 is
//! X₀ = −W₀(−α e^(−α)) / α (W₀: the principal branch of the Lambert W function). Each
//! cleaned block yields (1 − X₀) of a block of free pages for X₀ of migrations, so the
//! write amplification is
//!
//!   WA(u) = 1 / (1 − X₀) = α / (α + W₀(−α e^(−α))),
//!
//! and the migrations per out-of-place write are WA − 1. Source: Xiang & Kurkoski,
//! "An improved analytic expression for write amplification in NAND flash"
//! (arXiv:1110.4245, 2012; for over-provisioning ρ = 1/u − 1 = 0.3 it gives 2.36
//! against 2.35 simulated, where Agarwal & Marrow's closed form (1 + ρ)/(2ρ),
//! GLOBECOM 2010, gives 2.17); the same fixed point is Desnoyers' LRU/FIFO model
//! ("Analytic modeling of SSD write performance", SYSTOR 2012) and Hu et al.'s
//! large-block limit (SYSTOR 2009).
//!
//! It is the limit of uniformly written pages in steady state: the advisor's GC
//! prediction replays the run's writes on the region's blocks instead
//! ([`crate::greedy_sim`], which pages a run leaves cold, and for how long they share
//! blocks with written ones), and its tests hold that replay to this closed form.

/// Utilisation past which a region is taken as full (WA grows without bound at 1).
pub const MAX_UTILISATION: f64 = 0.98;

/// W₀(x) for x in [−1/e, 0]: the principal branch of the Lambert W function (w e^w = x,
/// w ≥ −1), by Halley's iteration from a branch-point series start.
pub fn lambert_w0(x: f64) -> f64 {
    let branch = -(-1.0f64).exp();
    if x <= branch {
        return -1.0;
    }
    if x == 0.0 {
        return 0.0;
    }
    // Near the branch point w ≈ −1 + p − p²/3 with p = sqrt(2(e x + 1)); elsewhere x.
    let p = (2.0 * (std::f64::consts::E * x + 1.0)).sqrt();
    let mut w = if x < -0.25 { -1.0 + p - p * p / 3.0 } else { x };
    for _ in 0..50 {
        let e = w.exp();
        let f = w * e - x;
        let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if step.abs() <= 1e-15 * (1.0 + w.abs()) {
            break;
        }
    }
    w
}

/// Greedy GC's write amplification (flash programs per out-of-place write) at
/// utilisation `u`, clamped to [`MAX_UTILISATION`]; 1 for an empty region.
pub fn write_amplification(u: f64) -> f64 {
    if u <= 0.0 {
        return 1.0;
    }
    let alpha = 1.0 / u.min(MAX_UTILISATION);
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

/// GC page migrations per out-of-place write at utilisation `u`: WA(u) − 1.
pub fn migrations_per_write(u: f64) -> f64 {
    (write_amplification(u) - 1.0).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambert_w0_inverts_w_exp_w() {
        for x in [-0.3678, -0.35, -0.2, -0.05, -1e-6] {
            let w = lambert_w0(x);
            assert!(w >= -1.0 && (w * w.exp() - x).abs() < 1e-12, "x {x}: w {w}");
        }
        assert_eq!(lambert_w0(0.0), 0.0);
    }

    #[test]
    fn write_amplification_matches_the_fixed_point_and_the_cited_value() {
        // The fixed point X0 = exp(−α(1 − X0)) holds for the WA returned.
        for u in [0.3, 0.5, 0.7, 0.9] {
            let x0 = 1.0 - 1.0 / write_amplification(u);
            assert!((x0 - (-(1.0 - x0) / u).exp()).abs() < 1e-9, "u {u}");
        }
        // ρ = 0.3 (u = 1/1.3): the source's 2.36.
        assert!((write_amplification(1.0 / 1.3) - 2.36).abs() < 0.005);
        // Monotone in u; nearly no GC in a nearly empty region.
        assert!(migrations_per_write(0.2) < 0.01);
        assert!(migrations_per_write(0.5) < migrations_per_write(0.8));
        assert!(migrations_per_write(1.5).is_finite());
    }
}
