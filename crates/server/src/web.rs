//! The single page, embedded in the binary (`web/` at the workspace root): the HTML,
//! its stylesheet and scripts, and the charting code (our own SVG charts, so every
//! chart exports as SVG and PNG and nothing is fetched from elsewhere). Served with
//! a Content-Security-Policy that allows only this origin.

use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../../../web/index.html");
const APP_JS: &str = include_str!("../../../web/app.js");
const CHARTS_JS: &str = include_str!("../../../web/charts.js");
const APP_CSS: &str = include_str!("../../../web/app.css");

const CSP: &str = "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'";

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache"), (CONTENT_SECURITY_POLICY, CSP)], body)
}

pub fn router() -> Router {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/charts.js", get(|| async { asset("text/javascript; charset=utf-8", CHARTS_JS) }))
        .route("/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
}
