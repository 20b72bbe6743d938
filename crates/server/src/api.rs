//! The JSON API under `/api`:
//!
//! | route | what |
//! | --- | --- |
//! | `GET /api/meta` | workloads (parameters, tables), device presets, storages, the demo's four scenarios, limits |
//! | `POST /api/validate` | checks a run request as `POST /api/runs` would, queues nothing |
//! | `POST /api/runs` | queues a run (`{"label", "config"}`): 202 with its id |
//! | `GET /api/runs` | every run, stored or in this process, by id |
//! | `GET /api/runs/ID` | a run's record (result, interval lines, device, analysis), or its live state |
//! | `GET /api/runs/ID/events` | Server-Sent Events: the live state at least once a second until the run ends |
//! | `POST /api/runs/ID/cancel` | stops a queued or running run |
//! | `PUT /api/runs/ID/tags` | replaces an ended run's tags and run sets (`{"tags", "sets"}`) |
//! | `DELETE /api/runs/ID` | deletes an ended run's record, only one the dashboard wrote |
//!
//! Errors are JSON `{"error", "field"?, "line"?, "column"?}` with a 4xx/5xx status:
//! 400 bad input, 403 a record the dashboard did not write, 404 no such run, 409 the
//! run has ended (cancel) or not yet (tags, delete), 413 body too large, 503 queue full
//! or shutting down. Only ids of digits reach the store.

use crate::pool::{Pool, Unchanged};
use crate::store::{parse_id, Untouched};
use crate::validate::{self, Annotation, Refusal};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures_util::Stream;
use rand::SeedableRng;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use workloads::registry::REGISTRY;

/// An error answer.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub Value);

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError(status, json!({ "error": message.into() }))
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, serde_json::to_value(r).unwrap_or_else(|e| json!({ "error": e.to_string() })))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

type Answer = Result<Response, ApiError>;

pub fn router(pool: Arc<Pool>) -> Router {
    Router::new()
        .route("/api/meta", get(meta))
        .route("/api/validate", post(validate_run))
        .route("/api/runs", post(submit).get(list))
        .route("/api/runs/{id}", get(run).delete(delete))
        .route("/api/runs/{id}/events", get(events))
        .route("/api/runs/{id}/cancel", post(cancel))
        .route("/api/runs/{id}/tags", put(annotate))
        .route("/api/{*rest}", get(not_found).post(not_found).put(not_found).delete(not_found))
        .layer(DefaultBodyLimit::max(validate::MAX_BODY_BYTES))
        .with_state(pool)
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such API route (see /api/meta)")
}

/// The body, or why it was not read (413 past the limit).
fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|r| {
        let status = r.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the request body is larger than {} bytes", validate::MAX_BODY_BYTES)
        } else {
            r.body_text()
        };
        ApiError::new(status, message)
    })
}

fn run_id(text: &str) -> Result<u64, ApiError> {
    parse_id(text).ok_or_else(|| ApiError::new(StatusCode::BAD_REQUEST, "a run id is 1 to 18 decimal digits"))
}

async fn meta(State(pool): State<Arc<Pool>>) -> Json<Value> {
    let workloads: Vec<Value> = REGISTRY
        .iter()
        .map(|w| {
            let tables = w
                .configure(&w.defaults())
                .map(|c| c.build(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1)).tables())
                .unwrap_or_default();
            json!({ "name": w.name, "about": w.about, "defaults": w.defaults(), "tables": tables })
        })
        .collect();
    Json(json!({
        "workloads": workloads,
        "device_presets": presets(),
        "storages": storages(),
        "ipa_modes": ["auto", "none", "slc", "pslc", "odd-mlc"],
        "scenarios": [
            { "name": "baseline", "title": "1 Baseline", "about": "No IPA, one region: the traditional approach." },
            { "name": "analyzer", "title": "2 Analyzer", "about": "A baseline whose log the IPA advisor analyses: update-size CDFs, skew, a recommended layout." },
            { "name": "global", "title": "3 Global IPA", "about": "IPA on every object, no regions." },
            { "name": "selective", "title": "4 Selective IPA", "about": "Regions: IPA only for the objects with small updates (edit the DDL)." },
        ],
        "limits": {
            "max_body_bytes": validate::MAX_BODY_BYTES,
            "max_device_mib": validate::MAX_DEVICE_BYTES >> 20,
            "max_sim_time_s": validate::MAX_SIM_TIME_S,
            "max_warmup_s": validate::MAX_WARMUP_S,
            "max_terminals": validate::MAX_TERMINALS,
        },
        "analyzer": pool.has_analyzer(),
        "git_commit": workloads::experiment::GIT_COMMIT,
    }))
}

/// Each device preset with its shape (the form shows it and sizes region layouts).
fn presets() -> Vec<Value> {
    nand::PRESET_NAMES
        .iter()
        .filter_map(|name| nand::Geometry::preset(name).ok().map(|g| (name, g)))
        .map(|(name, g)| {
            json!({
                "name": name,
                "chips": g.chips(),
                "blocks_per_chip": g.blocks_per_chip,
                "pages_per_block": g.pages_per_block,
                "page_bytes": g.page_bytes,
                "cell": g.cell.name(),
            })
        })
        .collect()
}

/// Each storage choice with the config value that selects it.
fn storages() -> Vec<Value> {
    use workloads::config::{IplStorageConfig, StorageConfig};
    let mut all = vec![
        ("noftl".to_string(), StorageConfig::Noftl),
        ("ipl".into(), StorageConfig::Ipl(IplStorageConfig::default())),
    ];
    for kind in flash::ftl::FtlKind::ALL {
        all.push((format!("ftl:{}", kind.name()), StorageConfig::Ftl(flash::ftl::FtlConfig::new(kind))));
    }
    all.into_iter()
        .map(|(name, config)| json!({ "name": name, "config": serde_json::to_value(config).unwrap_or(Value::Null) }))
        .collect()
}

async fn validate_run(payload: Result<Bytes, BytesRejection>) -> Answer {
    let checked = validate::check_body(&body(payload)?)?;
    Ok(Json(json!({ "ok": true, "config": checked.config })).into_response())
}

async fn submit(State(pool): State<Arc<Pool>>, payload: Result<Bytes, BytesRejection>) -> Answer {
    let checked = validate::check_body(&body(payload)?)?;
    let id = pool.submit(checked).map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "id": id }))).into_response())
}

async fn list(State(pool): State<Arc<Pool>>) -> Json<Value> {
    Json(json!({ "runs": pool.list(), "pending": pool.pending() }))
}

async fn run(State(pool): State<Arc<Pool>>, Path(id): Path<String>) -> Answer {
    let id = run_id(&id)?;
    let stored = {
        let pool = pool.clone();
        tokio::task::spawn_blocking(move || pool.store().load(id))
            .await
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    };
    match stored {
        Ok(Some(record)) => Ok(Json(record).into_response()),
        Ok(None) => match pool.live(id) {
            Some(live) => Ok(Json(json!({
                "id": id,
                "label": live.label,
                "status": live.status().name(),
                "config": live.config,
                "live": live.snapshot(0),
            }))
            .into_response()),
            None => Err(ApiError::new(StatusCode::NOT_FOUND, format!("no run {id}"))),
        },
        Err(e) => Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e)),
    }
}

async fn cancel(State(pool): State<Arc<Pool>>, Path(id): Path<String>) -> Answer {
    let id = run_id(&id)?;
    match pool.live(id) {
        Some(live) if live.cancel() => Ok(Json(json!({ "id": id, "cancelling": true })).into_response()),
        Some(live) => {
            Err(ApiError::new(StatusCode::CONFLICT, format!("run {id} has ended ({})", live.status().name())))
        }
        None if pool.store().load(id).ok().flatten().is_some() => {
            Err(ApiError::new(StatusCode::CONFLICT, format!("run {id} has ended")))
        }
        None => Err(ApiError::new(StatusCode::NOT_FOUND, format!("no run {id}"))),
    }
}

/// The answer to a change refused on run `id`.
fn unchanged(id: u64, why: Unchanged) -> ApiError {
    match why {
        Unchanged::Pending => ApiError::new(StatusCode::CONFLICT, format!("run {id} has not ended; wait until it has")),
        Unchanged::Stored(Untouched::NotFound) => ApiError::new(StatusCode::NOT_FOUND, format!("no run {id}")),
        Unchanged::Stored(Untouched::Foreign) => ApiError::new(
            StatusCode::FORBIDDEN,
            format!("runs/{id}.json was not written by this dashboard (no \"written_by\" mark); it is left alone"),
        ),
        Unchanged::Stored(Untouched::Io(e)) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn delete(State(pool): State<Arc<Pool>>, Path(id): Path<String>) -> Answer {
    let id = run_id(&id)?;
    tokio::task::spawn_blocking(move || pool.delete(id))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|why| unchanged(id, why))?;
    Ok(Json(json!({ "id": id, "deleted": true })).into_response())
}

async fn annotate(
    State(pool): State<Arc<Pool>>,
    Path(id): Path<String>,
    payload: Result<Bytes, BytesRejection>,
) -> Answer {
    let id = run_id(&id)?;
    let a = Annotation::check_body(&body(payload)?)?;
    let summary = tokio::task::spawn_blocking(move || pool.annotate(id, &a.tags, &a.sets))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|why| unchanged(id, why))?;
    Ok(Json(summary).into_response())
}

/// The live state as events: one at once, then on each change but at most four a
/// second, and at least one a second; the last is the final state.
async fn events(
    State(pool): State<Arc<Pool>>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let id = run_id(&id)?;
    let live = pool.live(id).ok_or_else(|| {
        ApiError::new(StatusCode::NOT_FOUND, format!("run {id} is not in this server's memory; GET /api/runs/{id}"))
    })?;
    let changed = live.subscribe();
    let stream = futures_util::stream::unfold(Some((live, changed, 0usize, true)), |state| async move {
        let (live, mut changed, from, first) = state?;
        if !first {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let _ = tokio::time::timeout(Duration::from_millis(750), changed.changed()).await;
        }
        let snapshot = live.snapshot(from);
        let next = from + snapshot["intervals"].as_array().map_or(0, Vec::len);
        let last = matches!(snapshot["status"].as_str(), Some("done" | "failed" | "cancelled"));
        let event = Event::default().event("state").data(snapshot.to_string());
        Some((Ok(event), (!last).then_some((live, changed, next, false))))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
