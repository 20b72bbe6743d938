//! HTTP-level tests of every endpoint through the router: valid requests (a small run
//! end to end, its live events, its stored record surviving a restart), invalid ones
//! (bad JSON, unknown fields, schema syntax at line/column, bad ids), oversized bodies,
//! a full queue under concurrent submissions, cancelling, and shutdown mid-run.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::{Dashboard, Options};
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// A run small enough for a debug build: TPC-B at scale 1 on a 256 MiB device.
fn small_config(sim_time_s: f64) -> Value {
    json!({
        "device": {"blocks_per_chip": 64},
        "engine": {"ipa": "0x0"},
        "workload": {"name": "tpcb", "scale": 1},
        "driver": {"warmup_s": 0.0, "sim_time_s": sim_time_s, "terminals": 4}
    })
}

async fn call(app: &axum::Router, method: &str, uri: &str, body: Option<Vec<u8>>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn submit(app: &axum::Router, label: &str, config: Value) -> (StatusCode, Value) {
    let body = serde_json::to_vec(&json!({"label": label, "config": config})).unwrap();
    call(app, "POST", "/api/runs", Some(body)).await
}

/// Polls a run's record until it is stored in a final status.
async fn wait_final(app: &axum::Router, id: u64) -> Value {
    let start = Instant::now();
    loop {
        let (status, record) = call(app, "GET", &format!("/api/runs/{id}"), None).await;
        assert_eq!(status, StatusCode::OK, "{record}");
        if matches!(record["status"].as_str(), Some("done" | "failed" | "cancelled")) && record.get("result").is_some()
        {
            return record;
        }
        assert!(start.elapsed() < Duration::from_secs(300), "run {id} did not end: {record}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An interval line's latency percentiles: present, and each median at most its p99.
fn assert_percentiles(line: &Value) {
    for what in ["read", "write", "transaction"] {
        let p =
            |q: &str| line[format!("{what}_latency_{q}_ms")].as_f64().unwrap_or_else(|| panic!("{what} {q}: {line}"));
        assert!(0.0 <= p("p50") && p("p50") <= p("p99"), "{what}: {line}");
    }
}

/// The device snapshot's per-chip page states, each chip's adding up to its pages.
fn chip_states(device: &Value) -> Vec<Value> {
    let chips = device["chip_pages"].as_array().unwrap().clone();
    assert_eq!(chips.len() as u64, device["chips"].as_u64().unwrap(), "{device}");
    let pages = device["blocks_per_chip"].as_u64().unwrap() * device["pages_per_block"].as_u64().unwrap();
    for (i, c) in chips.iter().enumerate() {
        assert_eq!(c["chip"], i, "{c}");
        let states = ["free", "valid", "appended", "invalid", "unused", "programmed"];
        let sum: u64 = states.iter().map(|s| c[format!("{s}_pages")].as_u64().unwrap()).sum();
        assert_eq!(sum, pages, "chip {i}: {c}");
    }
    // Per block (the heat map's hover): valid, appended and invalid add up to the chip's.
    let blocks = device["blocks_per_chip"].as_u64().unwrap() as usize;
    for state in ["valid", "appended", "invalid"] {
        let per_block = device["block_pages"][state].as_array().unwrap();
        if per_block.is_empty() {
            continue;
        }
        assert_eq!(per_block.len(), chips.len() * blocks, "{state}");
        for (i, c) in chips.iter().enumerate() {
            let sum: u64 = per_block[i * blocks..(i + 1) * blocks].iter().map(|v| v.as_u64().unwrap()).sum();
            assert_eq!(sum, c[format!("{state}_pages")].as_u64().unwrap(), "chip {i} {state}: {c}");
        }
    }
    chips
}

fn open(dir: &std::path::Path, jobs: usize, queue_max: usize) -> Dashboard {
    Dashboard::open(Options { jobs, queue_max, ..Options::new(dir) }, None).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_goes_live_finishes_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let dashboard = open(dir.path(), 1, 4);
    let app = dashboard.router();

    let (status, meta) = call(&app, "GET", "/api/meta", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(meta["scenarios"].as_array().unwrap().len(), 4);
    assert!(meta["workloads"].as_array().unwrap().iter().any(|w| w["name"] == "tpcb" && w["tables"][0] == "branch"));
    assert!(meta["storages"].as_array().unwrap().iter().any(|s| s["name"] == "ftl:dftl"));

    let (status, checked) =
        call(&app, "POST", "/api/validate", Some(serde_json::to_vec(&json!({"config": small_config(1.0)})).unwrap()))
            .await;
    assert_eq!(status, StatusCode::OK, "{checked}");
    assert_eq!(checked["config"]["driver"]["progress_interval_s"], json!(0.01), "interval lines filled in");

    let (status, answer) = submit(&app, "small", small_config(1.0)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let id = answer["id"].as_u64().unwrap();

    // The event stream: the first state at once, then updates, the last one final.
    let response = app
        .clone()
        .oneshot(Request::builder().uri(format!("/api/runs/{id}/events")).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let (mut states, mut intervals) = (Vec::new(), 0);
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap();
        let Some(data) = frame.data_ref() else { continue };
        for line in std::str::from_utf8(data).unwrap().lines() {
            if let Some(json) = line.strip_prefix("data: ") {
                let state: Value = serde_json::from_str(json).unwrap();
                assert_eq!(state["intervals_from"].as_u64().unwrap(), intervals, "intervals arrive once, in order");
                for line in state["intervals"].as_array().unwrap() {
                    assert_percentiles(line);
                }
                intervals += state["intervals"].as_array().unwrap().len() as u64;
                states.push(state);
            }
        }
    }
    assert!(states.len() >= 2, "{states:?}");
    assert_eq!(states.last().unwrap()["status"], "done", "{:?}", states.last());
    assert!(intervals >= 50, "interval lines streamed: {intervals}");

    let record = wait_final(&app, id).await;
    assert_eq!(record["label"], "small");
    assert!(record["result"]["throughput_tps"].as_f64().unwrap() > 0.0);
    assert_eq!(record["intervals"].as_array().unwrap().len() as u64, intervals);
    assert!(record["result"]["config"]["device"].get("image").is_none(), "no scratch path in the result");
    let device = &record["device"];
    assert_eq!(device["erase_counts"].as_array().unwrap().len() as u64, device["chips"].as_u64().unwrap() * 64);
    assert!(device["regions"].as_array().unwrap().iter().any(|r| r["name"] == "data"), "{device}");
    let chips = chip_states(device);
    assert!(chips.iter().all(|c| c["appended_pages"] == 0 && c["programmed_pages"] == 0), "IPA off: {chips:?}");
    assert!(record["intervals"].as_array().unwrap().iter().any(|l| l["read_latency_p99_ms"].as_f64() > Some(0.0)));
    assert!(std::fs::read_dir(dir.path().join("tmp")).unwrap().next().is_none(), "scratch image removed");

    let (status, _) = call(&app, "POST", &format!("/api/runs/{id}/cancel"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "a finished run cannot be cancelled");
    assert!(Dashboard::open(Options::new(dir.path()), None).is_err(), "one server per data directory");
    dashboard.shutdown();
    drop((app, dashboard));

    // A new server on the same directory has the run.
    let again = open(dir.path(), 1, 4).router();
    let (status, list) = call(&again, "GET", "/api/runs", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["runs"][0]["id"], id);
    assert_eq!(list["runs"][0]["status"], "done");
    let (_, stored) = call(&again, "GET", &format!("/api/runs/{id}"), None).await;
    assert_eq!(stored, record);
    let (status, _) = call(&again, "GET", &format!("/api/runs/{id}/events"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no live state after a restart; the record has it all");
    let (_, next) = submit(&again, "", small_config(0.1)).await;
    assert_eq!(next["id"].as_u64(), Some(id + 1), "ids continue after the stored ones");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), 1, 4).router();
    let post = |body: &[u8]| call(&app, "POST", "/api/runs", Some(body.to_vec()));

    let (status, e) = post(b"{\"config\": {").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(e["line"], 1, "{e}");
    let (status, e) = post(br#"{"config": {}, "path": "/etc"}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(e["error"].as_str().unwrap().contains("unknown field `path`"), "{e}");

    let mut config = small_config(1.0);
    config["engine"]["schema"] = json!("CREATE REGION hot (${IPA});\nCREATE TABLESPACE ts_data REGION=hot);");
    let (status, e) = submit(&app, "", config).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!((e["field"].as_str(), e["line"].as_u64()), (Some("engine.schema"), Some(2)), "{e}");
    assert!(e["column"].as_u64().unwrap() > 1, "{e}");

    let mut config = small_config(1.0);
    config["device"]["blocks_per_chip"] = json!(4096);
    let (status, e) = submit(&app, "", config).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(e["field"], "device.blocks_per_chip", "{e}");
    let mut config = small_config(1.0);
    config["workload"]["scale"] = json!(0);
    let (status, e) = submit(&app, "", config).await;
    assert_eq!((status, e["field"].as_str()), (StatusCode::BAD_REQUEST, Some("workload.scale")), "{e}");
    let mut config = small_config(1.0);
    config["device"]["image"] = json!("../../etc/passwd");
    let (status, e) = submit(&app, "", config).await;
    assert_eq!((status, e["field"].as_str()), (StatusCode::BAD_REQUEST, Some("device.image")), "{e}");

    // Oversized: refused before it is read, as JSON.
    let huge = format!(r#"{{"label": "{}", "config": {{}}}}"#, "x".repeat(server::validate::MAX_BODY_BYTES));
    let (status, e) = post(huge.as_bytes()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(e["error"].as_str().unwrap().contains("larger than"), "{e}");
    let (status, _) = call(&app, "POST", "/api/validate", Some(huge.into_bytes())).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    for (method, uri, expected) in [
        ("GET", "/api/runs/abc", StatusCode::BAD_REQUEST),
        ("GET", "/api/runs/..%2F..%2Fetc", StatusCode::BAD_REQUEST),
        ("GET", "/api/runs/99999999999999999999", StatusCode::BAD_REQUEST),
        ("GET", "/api/runs/12", StatusCode::NOT_FOUND),
        ("GET", "/api/runs/12/events", StatusCode::NOT_FOUND),
        ("POST", "/api/runs/12/cancel", StatusCode::NOT_FOUND),
        ("POST", "/api/runs/x/cancel", StatusCode::BAD_REQUEST),
        ("GET", "/api/nothing", StatusCode::NOT_FOUND),
    ] {
        let (status, e) = call(&app, method, uri, None).await;
        assert_eq!(status, expected, "{method} {uri}: {e}");
        assert!(e["error"].is_string(), "{method} {uri}: a JSON error, got {e}");
    }
    let (status, list) = call(&app, "GET", "/api/runs", None).await;
    assert_eq!((status, list["runs"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "nothing was queued");

    let (status, _) = call(&app, "GET", "/", None).await;
    assert_eq!(status, StatusCode::OK);
    let page = app.clone().oneshot(Request::builder().uri("/app.js").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(page.headers()["content-type"], "text/javascript; charset=utf-8");
    assert!(page.headers().contains_key("content-security-policy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_submissions_meet_a_bounded_queue_and_cancel_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let dashboard = open(dir.path(), 1, 2);
    let app = dashboard.router();
    // One runs, two wait: of six at once, at least three are refused.
    let labels: Vec<String> = (0..6).map(|k| format!("c{k}")).collect();
    let answers = futures_util::future::join_all(labels.iter().map(|l| submit(&app, l, small_config(600.0)))).await;
    let accepted: Vec<u64> =
        answers.iter().filter(|(s, _)| *s == StatusCode::ACCEPTED).map(|(_, a)| a["id"].as_u64().unwrap()).collect();
    let refused: Vec<&Value> =
        answers.iter().filter(|(s, _)| *s == StatusCode::SERVICE_UNAVAILABLE).map(|(_, a)| a).collect();
    assert_eq!(accepted.len() + refused.len(), 6, "{answers:?}");
    assert!((2..=3).contains(&accepted.len()), "{answers:?}");
    assert!(refused[0]["error"].as_str().unwrap().contains("queue is full"), "{refused:?}");
    let mut ids = accepted.clone();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), accepted.len(), "ids are unique");

    // Cancel them all at once; each ends cancelled, with its record stored.
    let cancels = futures_util::future::join_all(accepted.iter().map(|id| {
        let uri = format!("/api/runs/{id}/cancel");
        let app = app.clone();
        async move { call(&app, "POST", &uri, None).await }
    }))
    .await;
    for (status, answer) in &cancels {
        assert_eq!(*status, StatusCode::OK, "{answer}");
    }
    for id in &accepted {
        let record = wait_final(&app, *id).await;
        assert_eq!(record["status"], "cancelled", "{record}");
        assert!(dir.path().join(format!("runs/{id}.json")).exists());
    }
    dashboard.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_running_and_queued_runs_and_stores_them() {
    let dir = tempfile::tempdir().unwrap();
    let dashboard = open(dir.path(), 1, 4);
    let app = dashboard.router();
    let (_, a) = submit(&app, "long", small_config(600.0)).await;
    let (_, b) = submit(&app, "waiting", small_config(600.0)).await;
    let (a, b) = (a["id"].as_u64().unwrap(), b["id"].as_u64().unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopping = dashboard.clone();
    tokio::task::spawn_blocking(move || stopping.shutdown()).await.unwrap();
    let (status, e) = submit(&app, "late", small_config(1.0)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{e}");
    drop((app, dashboard));
    let again = open(dir.path(), 1, 4).router();
    for id in [a, b] {
        let (status, record) = call(&again, "GET", &format!("/api/runs/{id}"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(record["status"], "cancelled", "{record}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_device_counts_appended_pages_per_chip_on_noftl_and_none_on_an_ftl() {
    let dir = tempfile::tempdir().unwrap();
    let dashboard = open(dir.path(), 1, 4);
    let app = dashboard.router();
    let (_, meta) = call(&app, "GET", "/api/meta", None).await;
    let page_ftl =
        meta["storages"].as_array().unwrap().iter().find(|s| s["name"] == "ftl:page").unwrap()["config"].clone();
    let mut ipa = small_config(0.5);
    ipa["engine"]["ipa"] = json!("2x4");
    let mut ftl = small_config(0.5);
    ftl["storage"] = page_ftl;
    let mut ids = Vec::new();
    for (label, config) in [("ipa", ipa), ("ftl", ftl)] {
        let (status, answer) = submit(&app, label, config).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{label}: {answer}");
        ids.push(answer["id"].as_u64().unwrap());
    }
    let ipa = wait_final(&app, ids[0]).await;
    assert_eq!(ipa["status"], "done", "{ipa}");
    assert!(ipa["result"]["in_place_appends"].as_u64().unwrap() > 0, "the run appends");
    let chips = chip_states(&ipa["device"]);
    let appended: u64 = chips.iter().map(|c| c["appended_pages"].as_u64().unwrap()).sum();
    assert!(appended > 0, "{chips:?}");
    let ftl = wait_final(&app, ids[1]).await;
    assert_eq!(ftl["status"], "done", "{ftl}");
    let chips = chip_states(&ftl["device"]);
    assert!(chips.iter().all(|c| c["appended_pages"] == 0 && c["valid_pages"] == 0), "{chips:?}");
    assert!(chips.iter().any(|c| c["programmed_pages"].as_u64() > Some(0)), "{chips:?}");
    dashboard.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_run_sets_and_delete_touch_only_the_dashboards_own_records() {
    let dir = tempfile::tempdir().unwrap();
    open(dir.path(), 1, 4).shutdown();
    // A record put into runs/ by hand: listed, but never tagged or deleted.
    let foreign = serde_json::to_string(&json!({"id": 5, "label": "by hand", "status": "done",
        "submitted_unix_s": 1, "config": {"workload": {"name": "tpcb"}}}))
    .unwrap();
    std::fs::write(dir.path().join("runs/5.json"), &foreign).unwrap();
    let dashboard = open(dir.path(), 1, 4);
    let app = dashboard.router();
    let body = json!({"label": "tagged", "config": small_config(0.1), "tags": ["paper "], "sets": ["sweep A"]});
    let (status, answer) = call(&app, "POST", "/api/runs", Some(serde_json::to_vec(&body).unwrap())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let id = answer["id"].as_u64().unwrap();
    assert_eq!(id, 6, "ids continue after the foreign record's");
    let record = wait_final(&app, id).await;
    assert_eq!((&record["tags"], &record["sets"]), (&json!(["paper"]), &json!(["sweep A"])), "{record}");

    let (_, list) = call(&app, "GET", "/api/runs", None).await;
    let runs = list["runs"].as_array().unwrap();
    let ours = runs.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!((&ours["seed"], &ours["params"], &ours["deletable"]), (&json!(1), &json!({"scale": 1}), &json!(true)));
    assert_eq!(ours["sim_time_s"], json!(0.1));
    assert!(ours["wall_seconds"].as_f64().unwrap() > 0.0, "{ours}");
    assert_eq!(runs.iter().find(|r| r["id"] == 5).unwrap()["deletable"], false);

    async fn put(app: &axum::Router, id: u64, body: Value) -> (StatusCode, Value) {
        call(app, "PUT", &format!("/api/runs/{id}/tags"), Some(body.to_string().into_bytes())).await
    }
    let (status, summary) = put(&app, id, json!({"tags": ["a", "b"], "sets": []})).await;
    assert_eq!(status, StatusCode::OK, "{summary}");
    assert_eq!((&summary["tags"], &summary["sets"]), (&json!(["a", "b"]), &json!([])));
    let (status, e) = put(&app, id, json!({"tags": ["x\ny"]})).await;
    assert_eq!((status, e["field"].as_str()), (StatusCode::BAD_REQUEST, Some("tags")), "{e}");
    let (status, e) = put(&app, 5, json!({"tags": ["a"]})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    let (status, _) = put(&app, 77, json!({"tags": ["a"]})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A run under way is neither tagged nor deleted.
    let (_, long) = submit(&app, "long", small_config(600.0)).await;
    let long = long["id"].as_u64().unwrap();
    assert_eq!(put(&app, long, json!({"tags": ["a"]})).await.0, StatusCode::CONFLICT);
    assert_eq!(call(&app, "DELETE", &format!("/api/runs/{long}"), None).await.0, StatusCode::CONFLICT);
    call(&app, "POST", &format!("/api/runs/{long}/cancel"), None).await;
    wait_final(&app, long).await;

    for (uri, expected) in [
        ("/api/runs/5", StatusCode::FORBIDDEN),
        ("/api/runs/..%2F5", StatusCode::BAD_REQUEST),
        ("/api/runs/77", StatusCode::NOT_FOUND),
    ] {
        let (status, e) = call(&app, "DELETE", uri, None).await;
        assert_eq!(status, expected, "{uri}: {e}");
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("runs/5.json")).unwrap(), foreign, "the foreign record stays");
    let (status, e) = call(&app, "DELETE", &format!("/api/runs/{id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{e}");
    assert!(!dir.path().join(format!("runs/{id}.json")).exists());
    assert_eq!(call(&app, "GET", &format!("/api/runs/{id}"), None).await.0, StatusCode::NOT_FOUND);
    let (_, list) = call(&app, "GET", "/api/runs", None).await;
    assert!(list["runs"].as_array().unwrap().iter().all(|r| r["id"] != id), "{list}");
    dashboard.shutdown();
}
