//! Units proven by other processes over MPI (the `mpi` feature, on Open MPI): rank 0 runs the
//! coordinator with an [`MpiRunner`]; every other rank runs [`serve`], proving the jobs it is
//! sent with its own search (its own map of the database and its own table) until told to
//! stop. Messages are JSON texts sent as bytes: a job (tag 1), a result (tag 2), stop (tag 3).

use super::{run_job, Done, Job, ProveError, Runner};
use crate::search::{Progress, Search, SearchError};
use kalah_solver::{parse_position, Board};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Rank;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

const JOB: i32 = 1;
const DONE: i32 = 2;
const STOP: i32 = 3;

fn job_bytes(j: &Job) -> Vec<u8> {
    json!({
        "id": j.id,
        "board": j.board.to_string(),
        "threshold": j.threshold,
        "budget": j.budget,
        "label": j.label,
    })
    .to_string()
    .into_bytes()
}

fn job_from(bytes: &[u8], houses: usize) -> Result<Job, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("bad job: {e}"))?;
    let board: Board = parse_position(v["board"].as_str().ok_or("job without board")?, houses)
        .map_err(|e| format!("bad job board: {e}"))?
        .board();
    Ok(Job {
        id: v["id"].as_u64().ok_or("job without id")?,
        board,
        threshold: v["threshold"]
            .as_i64()
            .and_then(|t| i32::try_from(t).ok())
            .ok_or("job without threshold")?,
        budget: v["budget"].as_u64().ok_or("job without budget")?,
        label: v["label"].as_str().unwrap_or("").to_string(),
    })
}

fn done_bytes(d: &Done) -> Vec<u8> {
    json!({
        "id": d.id,
        "truth": d.truth,
        "nodes": d.nodes,
        "seconds": d.seconds,
        "db_seeds": d.db_seeds,
        "worker": d.worker,
    })
    .to_string()
    .into_bytes()
}

fn done_from(bytes: &[u8]) -> Result<Done, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("bad result: {e}"))?;
    Ok(Done {
        id: v["id"].as_u64().ok_or("result without id")?,
        truth: v["truth"].as_bool(),
        nodes: v["nodes"].as_u64().ok_or("result without nodes")?,
        seconds: v["seconds"].as_f64().unwrap_or(0.0),
        db_seeds: v["db_seeds"].as_u64().unwrap_or(0) as u32,
        worker: v["worker"].as_str().unwrap_or("?").to_string(),
    })
}

/// The coordinator's side: one job at a time on each rank other than 0.
pub struct MpiRunner<'a> {
    world: &'a SimpleCommunicator,
    idle: Vec<Rank>,
    busy: HashMap<Rank, u64>,
}

impl<'a> MpiRunner<'a> {
    /// A runner over every rank of `world` but 0 (which must be this process).
    pub fn new(world: &'a SimpleCommunicator) -> MpiRunner<'a> {
        MpiRunner {
            world,
            idle: (1..world.size()).rev().collect(),
            busy: HashMap::new(),
        }
    }

    /// Tells every worker to stop (call once, at the end, whatever happened).
    pub fn stop_all(&self) {
        for r in 1..self.world.size() {
            self.world
                .process_at_rank(r)
                .send_with_tag(&[0u8][..], STOP);
        }
    }
}

impl Runner for MpiRunner<'_> {
    fn slots(&self) -> usize {
        (self.world.size() - 1).max(0) as usize
    }

    fn start(&mut self, job: Job) -> Result<(), ProveError> {
        let r = self
            .idle
            .pop()
            .ok_or_else(|| ProveError::Worker("no idle rank for a job".into()))?;
        self.world
            .process_at_rank(r)
            .send_with_tag(&job_bytes(&job)[..], JOB);
        self.busy.insert(r, job.id);
        Ok(())
    }

    fn wait(
        &mut self,
        _progress: &(dyn Fn(&Progress) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Done, ProveError> {
        loop {
            if cancel.load(Relaxed) {
                return Err(ProveError::Search(SearchError::Interrupted {
                    nodes: 0,
                    checkpoint: None,
                    stage: "waiting for workers".into(),
                    lower: 0,
                    upper: 0,
                }));
            }
            if let Some(status) = self.world.any_process().immediate_probe_with_tag(DONE) {
                let src = status.source_rank();
                let (bytes, _) = self
                    .world
                    .process_at_rank(src)
                    .receive_vec_with_tag::<u8>(DONE);
                let done = done_from(&bytes)
                    .map_err(|e| ProveError::Worker(format!("rank {src}: {e}")))?;
                if self.busy.remove(&src) != Some(done.id) {
                    return Err(ProveError::Worker(format!(
                        "rank {src} answered job {} it was not given",
                        done.id
                    )));
                }
                self.idle.push(src);
                return Ok(done);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A worker rank: proves the jobs rank 0 sends with `search` until told to stop (or
/// interrupted); returns the number of jobs proven.
pub fn serve(
    world: &SimpleCommunicator,
    search: &Search,
    houses: usize,
    db_seeds: u32,
    worker: &str,
    cancel: &AtomicBool,
) -> Result<u64, ProveError> {
    let root = world.process_at_rank(0);
    let mut jobs = 0;
    loop {
        let (bytes, status) = root.receive_vec::<u8>();
        if status.tag() == STOP {
            return Ok(jobs);
        }
        let job = job_from(&bytes, houses).map_err(ProveError::Worker)?;
        let done = run_job(search, &job, db_seeds, worker, &|_| {}, cancel)?;
        root.send_with_tag(&done_bytes(&done)[..], DONE);
        jobs += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let j = Job {
            id: 7,
            board: Board::new(&[1, 2, 3], &[4, 0, 6]),
            threshold: -3,
            budget: 1 << 40,
            label: "S1 N2, at least -3?".into(),
        };
        assert_eq!(job_from(&job_bytes(&j), 3).unwrap(), j);
        for truth in [Some(true), Some(false), None] {
            let d = Done {
                id: 9,
                truth,
                nodes: 12345,
                seconds: 1.5,
                db_seeds: 30,
                worker: "host:1".into(),
            };
            assert_eq!(done_from(&done_bytes(&d)).unwrap(), d);
        }
        assert!(job_from(b"{}", 3).is_err());
        assert!(done_from(b"[").is_err());
    }
}
