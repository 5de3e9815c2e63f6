//! `kalah serve`: a JSON HTTP API over the databases and the search, and the explorer page.
//!
//! `GET /api/v1/position` answers the value of a position and of each move (from the game's
//! end, the database, or the search within a time budget, with proven bounds when it runs
//! out); `GET /api/v1/openapi.json` describes the API; `GET /` is the explorer page. Every
//! answer carries `access-control-allow-origin: *`. The database of a rule set is the directory
//! `<db>/<rules slug>` (as `kalah db build` names it): no request names a path. Searches run on
//! a bounded pool (`--searches`), each with its own table; a request that finds none free
//! within its budget gets 503.

use super::common::{CliError, CliResult};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use clap::Args;
use kalah_driver::analyse::{AnalyseError, Analyser, SearchSource};
use kalah_driver::book::Books;
use kalah_driver::{Search, SearchConfig};
use kalah_solver::db::Database;
use kalah_solver::{Board, Endgame, Position, Rules};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Arguments of `kalah serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The directory of databases, one per rule set in `<DIR>/<rules slug>` (as built by
    /// `kalah db build`); rule sets without one are answered by the search alone.
    #[arg(long, value_name = "DIR", default_value = "data/db")]
    pub db: PathBuf,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Default time budget of a search, in milliseconds (a request may ask for less or up to
    /// --max-budget-ms with `budget_ms`).
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub budget_ms: u64,
    /// The largest budget a request may ask for.
    #[arg(long, default_value_t = 10000, value_name = "MS")]
    pub max_budget_ms: u64,
    /// Searches that may run at once (each on one thread with its own table).
    #[arg(long, default_value_t = 2)]
    pub searches: usize,
    /// The largest table of each search, in MiB (each starts at 16 MiB and doubles as it needs).
    #[arg(long, default_value_t = 64, value_name = "MB", value_parser = super::common::parse_tt_mb)]
    pub tt_mb: usize,
    /// Compressed databases up to this size (MiB, one byte a position) are decoded into
    /// memory on first use, for fast searches; larger ones are probed block by block.
    #[arg(long, default_value_t = 4096, value_name = "MB")]
    pub db_memory_mb: u64,
    /// The directory of opening books (`kalah book build`), asked before the databases and
    /// the search.
    #[arg(long, value_name = "DIR", default_value = super::book::DEFAULT_BOOKS)]
    pub books: PathBuf,
}

/// Rule sets whose databases and searches are kept at once.
const MAX_RULE_SETS: usize = 8;

struct Shared {
    root: PathBuf,
    budget: Duration,
    max_budget: Duration,
    tt_mb: usize,
    memory_mb: u64,
    /// The databases opened, by rules slug (`None`: that rule set has none).
    dbs: Mutex<HashMap<String, Option<Arc<Database>>>>,
    /// The directory of opening books.
    books_dir: PathBuf,
    /// The opening books read, by rules slug.
    books: Mutex<HashMap<String, Arc<Books>>>,
    /// Idle searches, by rules slug.
    idle: Mutex<HashMap<String, Vec<Search>>>,
    /// Permits to search.
    permits: tokio::sync::Semaphore,
}

/// An error answer: status and a JSON body `{"error": "..."}`.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

fn rules_json(r: &Rules) -> Value {
    super::engine::rules_json(r)
}

impl Shared {
    /// The opening books of `rules` (any starting seeds), read on first use.
    fn books(&self, rules: &Rules) -> Result<Arc<Books>, ApiError> {
        let slug = rules.slug();
        if let Some(b) = self.books.lock().unwrap().get(&slug) {
            return Ok(b.clone());
        }
        let b = Arc::new(Books::open_dir(&self.books_dir, rules).map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the opening books of these rules cannot be read: {e}"),
            )
        })?);
        let mut books = self.books.lock().unwrap();
        if books.len() >= MAX_RULE_SETS {
            books.clear();
        }
        books.insert(slug, b.clone());
        Ok(b)
    }

    /// Whether the books, already read, answer `board` (so no search is needed).
    fn in_book(&self, rules: &Rules, board: &Board) -> bool {
        self.books
            .lock()
            .unwrap()
            .get(&rules.slug())
            .is_some_and(|b| b.answer(rules, board).ok().flatten().is_some())
    }

    /// The database of `rules`, opened on first use.
    fn db(&self, rules: &Rules) -> Result<Option<Arc<Database>>, ApiError> {
        let slug = rules.slug();
        let mut dbs = self.dbs.lock().unwrap();
        if let Some(d) = dbs.get(&slug) {
            return Ok(d.clone());
        }
        if dbs.len() >= MAX_RULE_SETS {
            dbs.clear();
        }
        let dir = self.root.join(&slug);
        let db = if dir.is_dir() {
            let fail = |e: kalah_solver::DbError| {
                ApiError(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the database of these rules cannot be opened: {e}"),
                )
            };
            let mut db = Database::open(&dir, rules).map_err(fail)?;
            // Searches probe at random: compressed levels are decoded into memory first when
            // they fit the budget (stored levels are probed from their maps as they are).
            let bytes: u64 = (0..=db.max_seeds())
                .map(|l| kalah_solver::db::level_size(rules.houses, l))
                .sum();
            if bytes <= self.memory_mb << 20 {
                db.load_into_memory().map_err(fail)?;
            }
            Some(Arc::new(db))
        } else {
            None
        };
        dbs.insert(slug, db.clone());
        Ok(db)
    }

    /// An idle search for `rules` (made if none is idle); give it back with [`Shared::put`].
    fn take(&self, rules: &Rules, db: &Option<Arc<Database>>) -> Search {
        let slug = rules.slug();
        if let Some(s) = self
            .idle
            .lock()
            .unwrap()
            .get_mut(&slug)
            .and_then(|v| v.pop())
        {
            return s;
        }
        Search::new(
            *rules,
            SearchConfig {
                tt_mb: self.tt_mb,
                tt_grow: Some(kalah_driver::search::tt::GROW_START_MB),
                threads: 1,
                endgame: db.clone().map(|d| d as Arc<dyn Endgame>),
                deepening: (5, 3, 11),
                ..SearchConfig::default()
            },
        )
    }

    fn put(&self, rules: &Rules, s: Search) {
        let mut idle = self.idle.lock().unwrap();
        if idle.len() >= MAX_RULE_SETS && !idle.contains_key(&rules.slug()) {
            idle.clear();
        }
        idle.entry(rules.slug()).or_default().push(s);
    }
}

/// A search from the pool, taken when the answer first needs one (waiting at most `wait` for
/// a permit) and given back when the answer is done.
struct Pooled<'a> {
    sh: &'a Shared,
    rules: &'a Rules,
    db: &'a Option<Arc<Database>>,
    wait: Duration,
    search: Option<(Search, tokio::sync::SemaphorePermit<'a>)>,
}

impl SearchSource for Pooled<'_> {
    fn search(&mut self) -> Result<&Search, AnalyseError> {
        if self.search.is_none() {
            let waiting = Instant::now();
            let permit = loop {
                if let Ok(p) = self.sh.permits.try_acquire() {
                    break p;
                }
                if waiting.elapsed() >= self.wait {
                    return Err(AnalyseError::NoSearch(BUSY.into()));
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            self.search = Some((self.sh.take(self.rules, self.db), permit));
        }
        Ok(&self.search.as_ref().unwrap().0)
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some((s, permit)) = self.search.take() {
            self.sh.put(self.rules, s);
            drop(permit);
        }
    }
}

const BUSY: &str = "every search is busy; try again";

/// The answer for one request (run on a blocking thread).
fn answer(
    sh: &Shared,
    rules: &Rules,
    pos: &Position,
    budget: Duration,
    permit_wait: Duration,
) -> Result<Value, ApiError> {
    let start = Instant::now();
    let board = pos.board();
    let db = sh.db(rules)?;
    let books = sh.books(rules)?;
    // The answer is due within the budget: the searches stop a little before it, leaving
    // time for the moves not searched yet and the reply.
    let deadline = start + budget - (budget / 10).min(Duration::from_millis(200));
    let never = AtomicBool::new(false);
    let analyser = Analyser {
        rules,
        books: &books,
        db: db.as_deref(),
    };
    let mut pool = Pooled {
        sh,
        rules,
        db: &db,
        wait: permit_wait,
        search: None,
    };
    let a = analyser
        .analyse(&board, &mut pool, deadline, &never, &mut |_| {})
        .map_err(|e| match e {
            AnalyseError::NoSearch(m) => ApiError(StatusCode::SERVICE_UNAVAILABLE, m),
            e => ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        })?;
    drop(pool);
    let line = analyser
        .best_line(&board, &a, 400)
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let pv = super::solve::pv_notation(rules, pos, &line);
    let (lo, hi) = (a.lower, a.upper);
    let best: Vec<usize> = a
        .moves
        .iter()
        .filter(|m| lo == hi && m.lower == lo && m.upper == lo)
        .map(|m| m.house + 1)
        .collect();
    Ok(json!({
        "rules": rules_json(rules),
        "position": pos.full(),
        "to_move": pos.to_move().name(),
        "over": a.moves.is_empty(),
        "value": (lo == hi).then_some(lo),
        "lower": lo,
        "upper": hi,
        "margin": (lo == hi).then_some(lo + pos.store_lead()),
        "source": a.source.name(),
        "moves": a.moves.iter().map(|m| {
            let (next, s) = pos.play(rules, m.house);
            json!({
                "house": m.house + 1,
                "value": (m.lower == m.upper).then_some(m.lower),
                "lower": m.lower,
                "upper": m.upper,
                "next": next.full(),
                "extra_turn": s.extra_turn,
                "capture": s.captured,
            })
        }).collect::<Vec<_>>(),
        "best": best,
        "pv": pv,
        "nodes": a.nodes,
        "seconds": start.elapsed().as_secs_f64(),
    }))
}

async fn position(
    State(sh): State<Arc<Shared>>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q = kalah_api::decode_position_query(raw.as_deref().unwrap_or("")).map_err(bad)?;
    let (rules, pos) = (q.rules, q.position);
    let budget = match q.budget_ms {
        None => sh.budget,
        Some(ms) => Duration::from_millis(ms).min(sh.max_budget),
    };
    // A position the game's end or an opened database settles takes microseconds: answered
    // here. Anything that may search, or open a database, goes to a blocking thread.
    let settled = pos.board().final_value(&rules).is_some()
        || sh.in_book(&rules, &pos.board())
        || sh
            .dbs
            .lock()
            .unwrap()
            .get(&rules.slug())
            .and_then(|d| d.as_ref())
            .is_some_and(|d| pos.board().seeds() <= d.max_seeds());
    if settled {
        return answer(&sh, &rules, &pos, budget, budget).map(Json);
    }
    let sh2 = sh.clone();
    tokio::task::spawn_blocking(move || {
        answer(
            &sh2,
            &rules,
            &pos,
            budget,
            budget.max(Duration::from_millis(100)),
        )
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map(Json)
}

async fn openapi() -> Json<Value> {
    Json(openapi_doc())
}

/// The OpenAPI document of the API.
fn openapi_doc() -> Value {
    let param = |name: &str, ty: &str, desc: &str| json!({"name": name, "in": "query", "required": false, "schema": {"type": ty}, "description": desc});
    json!({
        "openapi": "3.0.3",
        "info": {"title": "kalah", "version": "1", "description": "Values of Kalah positions under perfect play, from endgame databases and a proving search."},
        "paths": {
            "/api/v1/position": {"get": {
                "summary": "The value of a position for the player to move and of each legal move",
                "parameters": [
                    param("position", "string", "Short form \"3 3 3 / 3 3 3\" (mover first) or full form \"S: 4 4 4 4 4 4 [0] / 4 4 4 4 4 4 [0]\"; default: the start"),
                    param("houses", "integer", "Houses per side, 1 to 8 (default 6)"),
                    param("seeds", "integer", "Seeds per house at the start (default 4); used when no position is given"),
                    param("capture", "string", "standard (default), empty or never"),
                    param("leftover", "string", "owner (default), emptier or discard"),
                    param("end", "string", "either (default) or mover"),
                    param("budget_ms", "integer", "Time budget of the search for positions beyond the database"),
                ],
                "responses": {
                    "200": {"description": "value (null when only bounds are proven), lower, upper, margin, source (final, book, database, search or bounds; book with a null value: proven bounds from a proof ledger), moves [{house, value, lower, upper, next, extra_turn, capture}], best, pv, nodes, seconds"},
                    "400": {"description": "{\"error\": \"...\"}: a bad parameter or position"},
                    "503": {"description": "every search is busy"}
                }
            }},
            "/api/v1/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3"}}}}
        }
    })
}

async fn page() -> Html<&'static str> {
    Html(include_str!("explorer.html"))
}

async fn not_found() -> ApiError {
    ApiError(
        StatusCode::NOT_FOUND,
        "no such path; see /api/v1/openapi.json".into(),
    )
}

async fn cors(mut r: Response) -> Response {
    r.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}

/// The router of the server (for tests too).
fn router(sh: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/v1/position", get(position))
        .route("/api/v1/openapi.json", get(openapi))
        .fallback(not_found)
        .layer(axum::middleware::map_response(cors))
        .with_state(sh)
}

/// Runs `kalah serve` until Ctrl-C.
pub fn run(args: &ServeArgs) -> CliResult {
    let memory = super::common::memory_mib();
    if args.searches.max(1).saturating_mul(args.tt_mb) > memory {
        return Err(CliError::usage(format!(
            "--searches {} with --tt-mb {}: their tables could take {} MiB, more than this \
             machine's memory ({memory} MiB)",
            args.searches,
            args.tt_mb,
            args.searches.max(1).saturating_mul(args.tt_mb)
        )));
    }
    let sh = Arc::new(Shared {
        root: args.db.clone(),
        budget: Duration::from_millis(args.budget_ms.min(args.max_budget_ms)),
        max_budget: Duration::from_millis(args.max_budget_ms),
        tt_mb: args.tt_mb.max(1),
        memory_mb: args.db_memory_mb,
        dbs: Mutex::new(HashMap::new()),
        books_dir: args.books.clone(),
        books: Mutex::new(HashMap::new()),
        idle: Mutex::new(HashMap::new()),
        permits: tokio::sync::Semaphore::new(args.searches.max(1)),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("starting the server: {e}")))?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .map_err(|e| CliError::usage(format!("--addr {}: {e}", args.addr)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| CliError::failure(e.to_string()))?;
        println!(
            "listening on http://{addr}/ (databases under {})",
            args.db.display()
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
        axum::serve(listener, router(sh))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| CliError::failure(format!("server: {e}")))
    })
}
