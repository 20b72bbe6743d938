//! The workload registry: every workload an experiment can run, by name, with its
//! parameters. A workload's file defines its parameter struct (serde, with defaults,
//! unknown names refused) implementing [`WorkloadParams`]; one line in [`REGISTRY`]
//! makes it known to the experiment API, and through it to the command line
//! (`--workload NAME --param KEY=VALUE`) and every other caller.
//!
//! Parameters travel as a JSON-like map ([`Params`]) so a config file can hold any
//! workload's; [`Registered::configure`] turns them into the typed struct, checks
//! each parameter's range and fills in the defaults.

use crate::config_error::ConfigError;
use crate::params::{parse_params, Configured, Params, WorkloadParams};

/// One registered workload.
#[derive(Debug)]
pub struct Registered {
    pub name: &'static str,
    pub about: &'static str,
    configure: fn(&Params) -> Result<Box<dyn Configured>, ConfigError>,
}

impl Registered {
    pub const fn of<P: WorkloadParams>() -> Registered {
        Registered { name: P::NAME, about: P::ABOUT, configure: configure::<P> }
    }

    /// Parses and checks `params` (missing ones take their defaults).
    pub fn configure(&self, params: &Params) -> Result<Box<dyn Configured>, ConfigError> {
        (self.configure)(params)
    }

    /// Every parameter with its default value.
    pub fn defaults(&self) -> Params {
        match self.configure(&Params::new()) {
            Ok(c) => c.params(),
            Err(e) => panic!("{}: the default parameters are refused: {e}", self.name),
        }
    }
}

fn configure<P: WorkloadParams>(params: &Params) -> Result<Box<dyn Configured>, ConfigError> {
    Ok(Box::new(parse_params::<P>(P::NAME, params, P::LEFT_OUT, P::check)?))
}

/// Every workload an experiment can run. Adding one: its file, and a line here.
pub static REGISTRY: &[Registered] = &[
    Registered::of::<crate::tpcb::TpcbParams>(),
    Registered::of::<crate::tpcc::TpccParams>(),
    Registered::of::<crate::tatp::TatpParams>(),
    Registered::of::<crate::linkbench::LinkbenchParams>(),
];

pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|w| w.name).collect()
}

/// The registered workload of this name.
pub fn find(name: &str) -> Result<&'static Registered, ConfigError> {
    REGISTRY.iter().find(|w| w.name == name).ok_or_else(|| {
        ConfigError::field(
            "workload.name",
            format!("unknown workload {} (registered: {})", crate::limits::quote(name), names().join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use serde_json::json;

    #[test]
    fn every_registered_workload_builds_from_its_defaults_under_its_own_name() {
        assert_eq!(names(), ["tpcb", "tpcc", "tatp", "linkbench"]);
        for w in REGISTRY {
            let defaults = w.defaults();
            assert!(!defaults.is_empty(), "{} has parameters", w.name);
            let configured = w.configure(&defaults).unwrap();
            assert_eq!(configured.params(), defaults, "{}: defaults are a fixed point", w.name);
            let built = configured.build(&mut ChaCha8Rng::seed_from_u64(1));
            assert_eq!(built.name(), w.name);
            assert!(!built.tables().is_empty());
            assert!(!w.about.is_empty());
        }
    }

    #[test]
    fn parameters_are_checked_and_unknown_ones_named() {
        let tpcc = find("tpcc").unwrap();
        let params = |v: serde_json::Value| v.as_object().unwrap().clone();
        let c = tpcc.configure(&params(json!({"warehouses": 3}))).unwrap();
        assert_eq!(c.size(), "3 warehouses");
        assert_eq!(c.params()["mix"], json!([45, 43, 4, 4, 4]), "defaults fill the rest");
        let e = tpcc.configure(&params(json!({"warehouses": 0}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.warehouses: must be at least 1"), "{e}");
        let e = tpcc.configure(&params(json!({"scale": 2}))).unwrap_err().to_string();
        assert_eq!(e, "workload.scale: tpcc takes no parameter `scale` (it takes: mix, warehouses, float_money)");
        let e = tpcc.configure(&params(json!({"warehouses": 2, "mix": [1, 2, 3]}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.mix: tpcc: invalid length 3"), "{e}");
        let e = tpcc.configure(&params(json!({"mix": [0, 0, 0, 0, 0]}))).unwrap_err().to_string();
        assert!(e.starts_with("workload.mix"), "{e}");
        let e = find("tpcd").unwrap_err().to_string();
        assert!(e.contains("registered: tpcb, tpcc, tatp, linkbench"), "{e}");
    }
}
