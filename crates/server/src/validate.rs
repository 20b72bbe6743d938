//! Server-side checks of a run request, before anything is queued. The experiment API
//! checks each field's range ([`workloads::Experiment::new`]); here come the dashboard's
//! own bounds, which keep one request from taking the machine: the device's raw size
//! (the emulated flash lives in memory and in a scratch image), the simulated times,
//! the terminals, the interval lines, the label and the schema's length. The schema is
//! parsed here so that a syntax error comes back at its line and column.
//!
//! The device (chips against the preset, the memory footprint against MemAvailable)
//! and every range are the experiment config's checks, the ones the command line and
//! the Python package make, with the same messages in config field names. A value
//! quoted in a refusal is cut to 80 characters (`workloads::limits::cut_quoted`).
//!
//! A refusal is a [`Refusal`]: the message, the field, and for the schema the position.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use workloads::config::ConfigError;
use workloads::limits::cut_quoted;
use workloads::{Experiment, ExperimentConfig, ExperimentError};

/// Request bodies larger than this are refused before they are read.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The emulated device's raw capacity (it is kept in memory and in a scratch image).
pub const MAX_DEVICE_BYTES: u64 = 1 << 30;
pub const MAX_SIM_TIME_S: f64 = 3600.0;
pub const MAX_WARMUP_S: f64 = 600.0;
pub const MAX_TERMINALS: usize = 256;
/// Interval lines per run (the live chart's points).
pub const MAX_INTERVALS: f64 = 2000.0;
/// Interval lines a run gets when its config asks for none.
pub const DEFAULT_INTERVALS: f64 = 100.0;
pub const MAX_LABEL_CHARS: usize = 80;
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
pub const MAX_JOBS: usize = 16;
/// Tags and run sets per run, and characters per name.
pub const MAX_NAMES: usize = 16;
pub const MAX_NAME_CHARS: usize = 40;

/// What a client sends to start a run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    #[serde(default)]
    pub label: String,
    /// An [`ExperimentConfig`] as JSON; missing fields take their defaults.
    pub config: Value,
    /// Free-form tags, and the run sets the run belongs to (a sweep's runs share one).
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub sets: Vec<String>,
}

/// A run's tags and run sets, as `PUT /api/runs/ID/tags` replaces them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Annotation {
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub sets: Vec<String>,
}

impl Annotation {
    /// Parses and checks a body: names trimmed, duplicates dropped, bounded.
    pub fn check_body(body: &[u8]) -> Result<Annotation, Refusal> {
        let a: Annotation = serde_json::from_slice(body)
            .map_err(|e| Refusal::new(cut_quoted(&format!("the body is not {{\"tags\": […], \"sets\": […]}}: {e}"))))?;
        Ok(Annotation { tags: check_names("tags", a.tags)?, sets: check_names("sets", a.sets)? })
    }
}

/// Tag or run-set names: trimmed, non-empty, at most [`MAX_NAME_CHARS`] characters
/// without control characters, at most [`MAX_NAMES`] of them, each once.
pub fn check_names(field: &str, names: Vec<String>) -> Result<Vec<String>, Refusal> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let name = name.trim().to_string();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(Refusal::field(
                field,
                format!("{name:?}: 1 to {MAX_NAME_CHARS} characters, no control characters"),
            ));
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    if out.len() > MAX_NAMES {
        return Err(Refusal::field(field, format!("at most {MAX_NAMES}, got {}", out.len())));
    }
    Ok(out)
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Refusal {
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// 1-based position in the field's text (the schema) or in the body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

impl Refusal {
    pub fn new(error: impl Into<String>) -> Refusal {
        Refusal { error: error.into(), field: None, line: None, column: None }
    }

    fn field(field: &str, problem: impl std::fmt::Display) -> Refusal {
        let error = cut_quoted(&format!("{field}: {problem}"));
        Refusal { error, field: Some(field.into()), line: None, column: None }
    }
}

impl From<ConfigError> for Refusal {
    fn from(e: ConfigError) -> Refusal {
        match e {
            ConfigError::Syntax { line, column, message } => Refusal {
                error: format!("{line}:{column}: {message}"),
                field: None,
                line: Some(line),
                column: Some(column),
            },
            ConfigError::Field { field, problem } => Refusal::field(&field, problem),
            ConfigError::Footprint(_) => {
                Refusal { error: e.to_string(), field: e.field_name().map(str::to_string), line: None, column: None }
            }
        }
    }
}

/// A checked request: the label and the resolved config, ready for the queue.
#[derive(Debug)]
pub struct Checked {
    pub label: String,
    pub config: ExperimentConfig,
    pub tags: Vec<String>,
    pub sets: Vec<String>,
}

/// Parses and checks a request body.
pub fn check_body(body: &[u8]) -> Result<Checked, Refusal> {
    let text = std::str::from_utf8(body).map_err(|e| Refusal::new(format!("the body is not UTF-8: {e}")))?;
    let request: RunRequest = serde_json::from_str(text).map_err(|e| Refusal {
        error: cut_quoted(&format!("the body is not a run request ({{\"label\": …, \"config\": {{…}}}}): {e}")),
        field: None,
        line: Some(e.line()),
        column: Some(e.column()),
    })?;
    check(request)
}

/// Checks a parsed request.
pub fn check(request: RunRequest) -> Result<Checked, Refusal> {
    let label = request.label.trim().to_string();
    if label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(Refusal::field("label", format!("at most {MAX_LABEL_CHARS} characters, no control characters")));
    }
    let (tags, sets) = (check_names("tags", request.tags)?, check_names("sets", request.sets)?);
    let mut config: ExperimentConfig = serde_json::from_value(request.config).map_err(|e| {
        // serde_json names no field for a value tree; the message names it.
        Refusal::field("config", e)
    })?;
    if config.device.image.is_some() {
        return Err(Refusal::field("device.image", "the dashboard keeps device images itself; leave it out"));
    }
    // The experiment config's device check first, so a device every front-end refuses
    // is refused here in the same words; then the dashboard's own bound.
    let geometry = config.device.fitting_geometry()?;
    if geometry.capacity_bytes() > MAX_DEVICE_BYTES {
        return Err(Refusal::field(
            "device.blocks_per_chip",
            format!(
                "the device has {} MiB of raw flash; the dashboard runs devices of at most {} MiB (use fewer \
                 blocks per chip or fewer chips)",
                geometry.capacity_bytes() >> 20,
                MAX_DEVICE_BYTES >> 20
            ),
        ));
    }
    let d = &mut config.driver;
    let bounded = |field: &str, v: f64, max: f64| {
        if v.is_finite() && v <= max {
            Ok(())
        } else {
            Err(Refusal::field(field, format!("at most {max} simulated seconds on the dashboard, got {v}")))
        }
    };
    bounded("driver.sim_time_s", d.sim_time_s, MAX_SIM_TIME_S)?;
    bounded("driver.warmup_s", d.warmup_s, MAX_WARMUP_S)?;
    if d.terminals > MAX_TERMINALS {
        return Err(Refusal::field("driver.terminals", format!("at most {MAX_TERMINALS} on the dashboard")));
    }
    if d.progress_interval_s == 0.0 && d.sim_time_s > 0.0 {
        d.progress_interval_s = d.sim_time_s / DEFAULT_INTERVALS;
    }
    if d.progress_interval_s > 0.0 && (d.sim_time_s + d.warmup_s) / d.progress_interval_s > MAX_INTERVALS {
        return Err(Refusal::field(
            "driver.progress_interval_s",
            format!("at most {MAX_INTERVALS} interval lines per run: make the interval longer"),
        ));
    }
    if let Some(schema) = &config.engine.schema {
        check_schema(schema)?;
    }
    if let Some(ddl) = &config.driver.switch_ddl {
        check_sql("driver.switch_ddl", ddl)?;
    }
    let experiment = Experiment::new(config).map_err(|e| match e {
        ExperimentError::Config(c) => Refusal::from(c),
        other => Refusal::new(other.to_string()),
    })?;
    Ok(Checked { label, config: experiment.config().clone(), tags, sets })
}

/// The region layout's SQL: bounded, and parsed with `${IPA}` standing for region
/// options of the same length, so positions are the editor's.
pub fn check_schema(schema: &str) -> Result<(), Refusal> {
    check_sql("engine.schema", &schema.replace("${IPA}", "V=12  "))
}

fn check_sql(field: &str, text: &str) -> Result<(), Refusal> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(Refusal::field(field, format!("at most {MAX_SCHEMA_BYTES} bytes")));
    }
    engine::sql::parse(text).map(|_| ()).map_err(|e| {
        let (line, column) = match &e {
            engine::Error::Parse { line, column, .. } => (Some(*line), Some(*column)),
            _ => (None, None),
        };
        Refusal { line, column, ..Refusal::field(field, e) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(config: Value) -> RunRequest {
        RunRequest { label: "t".into(), config, tags: Vec::new(), sets: Vec::new() }
    }

    #[test]
    fn a_small_run_passes_and_gets_interval_lines() {
        let c = check(request(json!({"device": {"blocks_per_chip": 64}, "driver": {"sim_time_s": 2.0}}))).unwrap();
        assert_eq!(c.config.driver.progress_interval_s, 2.0 / DEFAULT_INTERVALS);
        assert_eq!(c.label, "t");
    }

    #[test]
    fn bounds_name_the_field() {
        let field = |config: Value| check(request(config)).unwrap_err().field.unwrap_or_default();
        assert_eq!(field(json!({})), "device.blocks_per_chip", "the 4 GiB default device is too large");
        let small = |driver: Value| json!({"device": {"blocks_per_chip": 64}, "driver": driver});
        assert_eq!(field(small(json!({"sim_time_s": 1e6}))), "driver.sim_time_s");
        assert_eq!(field(small(json!({"warmup_s": f64::MAX}))), "driver.warmup_s");
        assert_eq!(field(small(json!({"terminals": 100000}))), "driver.terminals");
        assert_eq!(
            field(small(json!({"sim_time_s": 100, "progress_interval_s": 0.001}))),
            "driver.progress_interval_s"
        );
        assert_eq!(field(small(json!({"terminals": 0}))), "driver.terminals", "the experiment API's own checks");
        let image = json!({"device": {"blocks_per_chip": 64, "image": "/etc/passwd"}});
        assert_eq!(field(image), "device.image");
        assert_eq!(field(json!({"bogus": 1})), "config");
        let long = RunRequest { label: "x".repeat(81), ..request(json!({})) };
        assert_eq!(check(long).unwrap_err().field.as_deref(), Some("label"));
    }

    #[test]
    fn schema_errors_carry_line_and_column() {
        let schema = "CREATE REGION hot (${IPA});\nCREATE TABLESPACE ts_data (REGION=hot;\n";
        let config = json!({"device": {"blocks_per_chip": 64}, "engine": {"schema": schema}});
        let r = check(request(config)).unwrap_err();
        assert_eq!(r.field.as_deref(), Some("engine.schema"));
        assert_eq!(r.line, Some(2), "{r:?}");
        assert!(r.column.is_some_and(|c| c > 30), "{r:?}");
        assert!(check_schema("CREATE REGION hot (${IPA}); CREATE TABLESPACE ts_data (REGION=hot);").is_ok());
        assert_eq!(
            check_schema(&"-".repeat(MAX_SCHEMA_BYTES + 1)).unwrap_err().field.as_deref(),
            Some("engine.schema")
        );
    }

    #[test]
    fn tags_and_sets_are_trimmed_bounded_and_named_in_refusals() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(check_names("tags", names(&[" a ", "b", "a"])).unwrap(), names(&["a", "b"]));
        for bad in [names(&[""]), names(&["x\ny"]), names(&[&"x".repeat(41)])] {
            assert_eq!(check_names("tags", bad).unwrap_err().field.as_deref(), Some("tags"));
        }
        let many: Vec<String> = (0..17).map(|k| k.to_string()).collect();
        assert!(check_names("sets", many).unwrap_err().error.contains("at most 16"));
        let a = Annotation::check_body(br#"{"tags": ["paper"], "sets": ["sweep 1"]}"#).unwrap();
        assert_eq!((a.tags, a.sets), (names(&["paper"]), names(&["sweep 1"])));
        assert!(Annotation::check_body(br#"{"tags": [], "path": "/"}"#).unwrap_err().error.contains("unknown field"));
    }

    #[test]
    fn bodies_that_are_not_requests_are_refused_with_a_position() {
        let r = check_body(b"{\"config\": {}, ").unwrap_err();
        assert_eq!(r.line, Some(1));
        assert!(check_body(&[0xff, 0xfe]).unwrap_err().error.contains("UTF-8"));
        assert!(check_body(b"{\"config\": {}, \"path\": \"/\"}").unwrap_err().error.contains("unknown field"));
    }
}
