//! `deltaflash serve`: the web dashboard (the `server` crate) on 127.0.0.1 by default;
//! another address only with `--bind`, and then with a warning, since the dashboard has
//! no authentication. The advisor's log reading lives in `advise`, so this is where the
//! dashboard gets its analyzer. Ctrl-C stops accepting runs, cancels the queued and
//! running ones (their records are stored as cancelled) and waits for the workers;
//! finished runs were stored when they finished.

use clap::Args;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub struct ServeArgs {
    /// TCP port (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Directory of the run history (JSON records) and scratch device images.
    #[arg(long, value_name = "DIR", default_value = "deltaflash-data")]
    data: PathBuf,
    /// Address to listen on; anything but loopback exposes the dashboard to the network.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Runs at once; more wait in a queue.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
}

pub fn run(args: ServeArgs) -> Result<(), String> {
    if !args.bind.is_loopback() {
        eprintln!(
            "warning: --bind {}: the dashboard has no authentication; anyone who reaches this address can start \
             and cancel runs",
            args.bind
        );
    }
    let analyze: Arc<server::AnalyzeFn> = Arc::new(crate::advise::dashboard_analysis);
    let options = server::Options { jobs: args.jobs, ..server::Options::new(&args.data) };
    let dashboard = server::Dashboard::open(options, Some(analyze))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let address = SocketAddr::new(args.bind, args.port);
        let listener =
            tokio::net::TcpListener::bind(address).await.map_err(|e| format!("--bind/--port {address}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        println!("deltaflash dashboard on http://{local}/ (runs in {}; Ctrl-C stops)", args.data.display());
        let stopping = dashboard.clone();
        axum::serve(listener, dashboard.router())
            .with_graceful_shutdown(async move {
                let _ = tokio::signal::ctrl_c().await;
                eprintln!("stopping: cancelling queued and running runs and storing their records");
                let _ = tokio::task::spawn_blocking(move || stopping.shutdown()).await;
            })
            .await
            .map_err(|e| format!("the server stopped: {e}"))
    })?;
    eprintln!("stopped; every run is stored in {}", args.data.display());
    Ok(())
}
