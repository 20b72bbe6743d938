//! The dashboard refuses a run request with the experiment config's device check, in the
//! words the command line and the Python package use (fields spelled as config fields):
//! chips over the preset, a footprint over `max_memory_bytes` or the memory available,
//! and a long value quoted at most 80 characters. Nothing refused is queued.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::{Dashboard, Options};
use tower::ServiceExt;

async fn post(app: &axum::Router, uri: &str, body: Value) -> (StatusCode, Value) {
    let request = Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_request_is_refused_as_every_front_end_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let dashboard = Dashboard::open(Options { jobs: 1, ..Options::new(dir.path()) }, None).unwrap();
    let app = dashboard.router();
    let long = "x".repeat(60_000); // the body limit is 64 KiB
    let cases = [
        (
            json!({"device": {"chips": 40, "blocks_per_chip": 8}}),
            "device.chips",
            "device.chips: must be in 1..=16 on the paper-emulator preset (8 channels × 2 chips), got 40".to_string(),
        ),
        (
            json!({"device": {"blocks_per_chip": 64, "max_memory_bytes": 1024}}),
            "device.blocks_per_chip",
            "for its metadata before any page is written, more than device.max_memory_bytes (1.0 KiB); pass a \
             smaller device.blocks_per_chip or device.no_data (metadata only)"
                .to_string(),
        ),
        (
            json!({"device": {"blocks_per_chip": 1_000_000}}),
            "device.blocks_per_chip",
            "this device (16 chips × 1000000 blocks × 64 pages of 4096 bytes) needs about".to_string(),
        ),
        (
            json!({"device": {"preset": long}}),
            "device.preset",
            format!("device.preset: unknown device preset `{}…` (60000 characters)", "x".repeat(80)),
        ),
        (json!({"device": {"chips": long}}), "config", format!("\"{}…\" (60000 characters)", "x".repeat(80))),
    ];
    for (config, field, expected) in cases {
        for uri in ["/api/validate", "/api/runs"] {
            let (status, refusal) = post(&app, uri, json!({"label": "bad", "config": config})).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {refusal}");
            let error = refusal["error"].as_str().unwrap_or_default();
            assert!(error.contains(&expected), "{uri}: wanted `{expected}` in `{}`", &error[..error.len().min(300)]);
            assert!(!error.contains(&"x".repeat(81)) && error.len() < 600, "{uri}: {} bytes", error.len());
            assert_eq!(refusal["field"], field, "{uri}: {refusal}");
        }
    }
    let request = Request::builder().uri("/api/runs").body(Body::empty()).unwrap();
    let listed = app.clone().oneshot(request).await.unwrap().into_body().collect().await.unwrap().to_bytes();
    let runs: Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(0), "nothing refused was queued: {runs}");
}
