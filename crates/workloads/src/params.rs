//! A workload's parameters: the map they travel as in configs ([`Params`]), the typed
//! struct each workload defines ([`WorkloadParams`]) and the checked form with its type
//! forgotten ([`Configured`]), which the registry ([`crate::registry`]) hands out.

use crate::config_error::ConfigError;
use crate::workload::Workload;
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A workload's parameters by name, as they appear in the `[workload]` table.
pub type Params = serde_json::Map<String, serde_json::Value>;

/// The parameters of one workload: a serde struct whose `Default` is the default run.
/// It should refuse unknown names (`#[serde(deny_unknown_fields, default)]`).
pub trait WorkloadParams: Serialize + DeserializeOwned + Default + std::fmt::Debug + Send + Sync + 'static {
    /// The name in configs and on the command line.
    const NAME: &'static str;
    /// One line for `--help`.
    const ABOUT: &'static str;
    /// Parameters left out of the serialisation at their default value
    /// (`skip_serializing_if`), so that configs without them keep their run keys.
    const LEFT_OUT: &'static [&'static str] = &[];
    /// Checks each parameter's range: `Err((parameter, problem))`.
    fn check(&self) -> Result<(), (&'static str, String)>;
    /// The database size in words, e.g. "10 warehouses".
    fn size(&self) -> String;
    /// The workload. It may draw from `rng` (TPC-C picks its NURand constants).
    fn build(&self, rng: &mut ChaCha8Rng) -> Box<dyn Workload>;
}

/// A workload's checked parameters, their type forgotten.
pub trait Configured: std::fmt::Debug + Send + Sync {
    /// Every parameter, defaults filled in.
    fn params(&self) -> Params;
    fn size(&self) -> String;
    fn build(&self, rng: &mut ChaCha8Rng) -> Box<dyn Workload>;
}

impl<P: WorkloadParams> Configured for P {
    fn params(&self) -> Params {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            other => panic!("{}: parameters must serialise to a map, got {other:?}", P::NAME),
        }
    }

    fn size(&self) -> String {
        WorkloadParams::size(self)
    }

    fn build(&self, rng: &mut ChaCha8Rng) -> Box<dyn Workload> {
        WorkloadParams::build(self, rng)
    }
}

/// Parses a workload's parameter struct from `params` (missing ones take their defaults)
/// and checks it: an unknown name, a value that does not fit or one out of range is
/// refused naming `workload.PARAMETER`. `left_out`: the parameters the struct leaves out
/// of its serialisation at their default ([`WorkloadParams::LEFT_OUT`]). Shared with the
/// SQLite workloads' registry.
pub fn parse_params<P: Serialize + DeserializeOwned + Default>(
    workload: &str,
    params: &Params,
    left_out: &[&str],
    check: fn(&P) -> Result<(), (&'static str, String)>,
) -> Result<P, ConfigError> {
    let parse = |map: Params| serde_json::from_value::<P>(serde_json::Value::Object(map));
    let known = match serde_json::to_value(P::default()) {
        Ok(serde_json::Value::Object(map)) => map,
        other => panic!("{workload}: parameters must serialise to a map, got {other:?}"),
    };
    let unknown = |name: &String| !known.contains_key(name) && !left_out.contains(&name.as_str());
    if let Some(name) = params.keys().find(|k| unknown(k)) {
        let names: Vec<&str> = known.keys().map(String::as_str).chain(left_out.iter().copied()).collect();
        return Err(ConfigError::field(
            format!("workload.{name}"),
            format!("{workload} takes no parameter {} (it takes: {})", crate::limits::quote(name), names.join(", ")),
        ));
    }
    let p: P = parse(params.clone()).map_err(|e| {
        // Name the parameter whose value does not fit: the first that fails alone.
        let culprit = params.iter().find(|(k, v)| parse(Params::from_iter([((*k).clone(), (*v).clone())])).is_err());
        let field = culprit.map_or("workload".to_string(), |(k, _)| format!("workload.{k}"));
        ConfigError::field(field, format!("{workload}: {e}"))
    })?;
    check(&p).map_err(|(name, problem)| ConfigError::field(format!("workload.{name}"), problem))?;
    Ok(p)
}
