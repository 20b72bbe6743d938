//! TATP (Telecom Application Transaction Processing, v1.0): subscriber, access_info,
//! special_facility and call_forwarding; the seven transactions with the
//! 35/35/10/14/2/2/2 mix (GetSubscriberData, GetAccessData, GetNewDestination,
//! UpdateLocation, UpdateSubscriberData, InsertCallForwarding, DeleteCallForwarding);
//! subscriber ids drawn non-uniformly as the specification's (rand(0, A) | rand(1, P))
//! mod P + 1. Insert and delete of call forwarding may find nothing to do or a duplicate,
//! as the specification expects; those transactions roll back.

use crate::limits::CountRange;
use crate::params::WorkloadParams;
use crate::workload::{FirstProblem, TxOutcome, TxResult, Workload, WorkloadError};
use crate::{err as e, int};
use engine::db::TableId;
use engine::types::Value;
use engine::Database;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Subscribers.
pub const SUBSCRIBERS: CountRange = CountRange { min: 1, max: u32::MAX as u64 };

/// TATP's parameters in an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TatpParams {
    pub subscribers: u32,
}

impl Default for TatpParams {
    fn default() -> Self {
        TatpParams { subscribers: 100_000 }
    }
}

impl WorkloadParams for TatpParams {
    const NAME: &'static str = "tatp";
    const ABOUT: &'static str = "TATP: the telecom benchmark's seven transactions, 80% reads";

    fn check(&self) -> Result<(), (&'static str, String)> {
        SUBSCRIBERS.check(self.subscribers.into()).map(|_| ()).map_err(|p| ("subscribers", p))
    }

    fn size(&self) -> String {
        format!("{} subscribers", self.subscribers)
    }

    fn build(&self, _rng: &mut ChaCha8Rng) -> Box<dyn Workload> {
        Box::new(Tatp::new(self.subscribers.into()))
    }
}

pub struct Tatp {
    pub subscribers: i64,
    tables: Option<[TableId; 4]>,
}

const SUBSCRIBER: usize = 0;
const ACCESS_INFO: usize = 1;
const SPECIAL_FACILITY: usize = 2;
const CALL_FORWARDING: usize = 3;

fn sub_nbr(s_id: i64) -> Value {
    Value::Text(format!("{s_id:015}"))
}

fn letters(rng: &mut ChaCha8Rng, n: usize) -> Value {
    Value::Text((0..n).map(|_| (b'A' + rng.gen_range(0..26u8)) as char).collect())
}

/// 1 to 4 distinct types out of 1..=4.
fn types(rng: &mut ChaCha8Rng) -> Vec<i64> {
    let mut all = vec![1, 2, 3, 4];
    for i in (1..4).rev() {
        all.swap(i, rng.gen_range(0..=i));
    }
    all.truncate(rng.gen_range(1..=4));
    all.sort_unstable();
    all
}

impl Tatp {
    pub fn new(subscribers: i64) -> Tatp {
        Tatp { subscribers: subscribers.max(1), tables: None }
    }

    fn ids(&mut self, db: &Database) -> Result<[TableId; 4], WorkloadError> {
        if let Some(t) = self.tables {
            return Ok(t);
        }
        let id = |n: &str| db.table_id(n).map_err(e);
        let t = [id("subscriber")?, id("access_info")?, id("special_facility")?, id("call_forwarding")?];
        self.tables = Some(t);
        Ok(t)
    }

    /// A subscriber id, non-uniform (TATP 3.1: A = 65535 up to a million subscribers).
    fn s_id(&self, rng: &mut ChaCha8Rng) -> i64 {
        let a = if self.subscribers <= 1_000_000 { 65_535 } else { 1_048_575 };
        (rng.gen_range(0..=a) | rng.gen_range(1..=self.subscribers)) % self.subscribers + 1
    }

    fn s_id_by_number(
        &self,
        db: &mut Database,
        tx: &engine::db::Transaction,
        t: TableId,
        nbr: &Value,
    ) -> Result<Option<i64>, WorkloadError> {
        let rows = db
            .scan_index(tx, t, "subscriber_nbr", std::slice::from_ref(nbr), std::slice::from_ref(nbr), 1)
            .map_err(e)?;
        Ok(rows.first().map(|r| int(&r[0])))
    }
}

impl Workload for Tatp {
    fn name(&self) -> &'static str {
        "tatp"
    }

    fn tables(&self) -> Vec<&'static str> {
        vec!["subscriber", "access_info", "special_facility", "call_forwarding"]
    }

    fn load(
        &mut self,
        db: &mut Database,
        placement: &dyn Fn(&str) -> String,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), WorkloadError> {
        let cols = |prefix: &str| (1..=10).map(|i| format!("{prefix}_{i} INT")).collect::<Vec<_>>().join(", ");
        db.execute(&format!(
            "CREATE TABLE subscriber (s_id INT PRIMARY KEY, sub_nbr VARCHAR(15) NOT NULL, {}, {}, {}, msc_location INT, vlr_location INT) TABLESPACE {s};
             CREATE UNIQUE INDEX subscriber_nbr ON subscriber (sub_nbr) TABLESPACE {s};
             CREATE TABLE access_info (s_id INT, ai_type INT, data1 INT, data2 INT, data3 CHAR(3), data4 CHAR(5), PRIMARY KEY (s_id, ai_type)) TABLESPACE {a};
             CREATE TABLE special_facility (s_id INT, sf_type INT, is_active INT, error_cntrl INT, data_a INT, data_b CHAR(5), PRIMARY KEY (s_id, sf_type)) TABLESPACE {f};
             CREATE TABLE call_forwarding (s_id INT, sf_type INT, start_time INT, end_time INT, numberx VARCHAR(15), PRIMARY KEY (s_id, sf_type, start_time)) TABLESPACE {c};",
            cols("bit"),
            cols("hex"),
            cols("byte2"),
            s = placement("subscriber"),
            a = placement("access_info"),
            f = placement("special_facility"),
            c = placement("call_forwarding"),
        ))
        .map_err(e)?;
        let t = self.ids(db)?;
        let mut tx = db.begin();
        for s in 1..=self.subscribers {
            let mut row = vec![Value::Int(s), sub_nbr(s)];
            row.extend((0..10).map(|_| Value::Int(rng.gen_range(0..=1))));
            row.extend((0..10).map(|_| Value::Int(rng.gen_range(0..=15))));
            row.extend((0..10).map(|_| Value::Int(rng.gen_range(0..=255))));
            row.extend([Value::Int(rng.gen_range(1..i32::MAX as i64)), Value::Int(rng.gen_range(1..i32::MAX as i64))]);
            db.insert(&tx, t[SUBSCRIBER], &row).map_err(e)?;
            for ai in types(rng) {
                let row = [
                    Value::Int(s),
                    Value::Int(ai),
                    Value::Int(rng.gen_range(0..=255)),
                    Value::Int(rng.gen_range(0..=255)),
                    letters(rng, 3),
                    letters(rng, 5),
                ];
                db.insert(&tx, t[ACCESS_INFO], &row).map_err(e)?;
            }
            for sf in types(rng) {
                let active = i64::from(rng.gen_range(0..100) < 85);
                let row = [
                    Value::Int(s),
                    Value::Int(sf),
                    Value::Int(active),
                    Value::Int(rng.gen_range(0..=255)),
                    Value::Int(rng.gen_range(0..=255)),
                    letters(rng, 5),
                ];
                db.insert(&tx, t[SPECIAL_FACILITY], &row).map_err(e)?;
                for start in [0, 8, 16] {
                    if rng.gen_range(0..4) == 0 {
                        continue;
                    }
                    let row = [
                        Value::Int(s),
                        Value::Int(sf),
                        Value::Int(start),
                        Value::Int(start + rng.gen_range(1..=8)),
                        sub_nbr(rng.gen_range(1..=self.subscribers)),
                    ];
                    db.insert(&tx, t[CALL_FORWARDING], &row).map_err(e)?;
                }
            }
            if s % 500 == 0 {
                db.commit(tx).map_err(e)?;
                tx = db.begin();
            }
        }
        db.commit(tx).map_err(e)?;
        Ok(())
    }

    fn transaction(&mut self, db: &mut Database, _terminal: usize, rng: &mut ChaCha8Rng) -> TxResult {
        let t = self.ids(db)?;
        let s = self.s_id(rng);
        let pick = rng.gen_range(0..100);
        let tx = db.begin();
        let done = |db: &mut Database, tx, kind, committed: bool, operations: u32| -> TxResult {
            if committed {
                db.commit(tx).map_err(e)?;
            } else {
                db.abort(tx).map_err(e)?;
            }
            Ok(TxOutcome { committed, operations, kind })
        };
        match pick {
            // GetSubscriberData
            0..35 => {
                let kind = "get_subscriber_data";
                db.get(&tx, t[SUBSCRIBER], &[Value::Int(s)]).map_err(e)?;
                done(db, tx, kind, true, 1)
            }
            // GetAccessData
            35..70 => {
                let kind = "get_access_data";
                let ai = rng.gen_range(1..=4);
                db.get(&tx, t[ACCESS_INFO], &[Value::Int(s), Value::Int(ai)]).map_err(e)?;
                done(db, tx, kind, true, 1)
            }
            // GetNewDestination
            70..80 => {
                let kind = "get_new_destination";
                let sf = rng.gen_range(1..=4);
                let start = [0, 8, 16][rng.gen_range(0..3)];
                let end = rng.gen_range(1..=24);
                let facility = db.get(&tx, t[SPECIAL_FACILITY], &[Value::Int(s), Value::Int(sf)]).map_err(e)?;
                let mut ops = 1;
                if facility.is_some_and(|f| int(&f[2]) == 1) {
                    let key = [Value::Int(s), Value::Int(sf)];
                    let forwards = db.scan(&tx, t[CALL_FORWARDING], &key, &key).map_err(e)?;
                    ops += forwards.len() as u32;
                    std::hint::black_box(forwards.iter().filter(|c| int(&c[2]) <= start && end < int(&c[3])).count());
                }
                done(db, tx, kind, true, ops)
            }
            // UpdateLocation
            80..94 => {
                let kind = "update_location";
                let Some(id) = self.s_id_by_number(db, &tx, t[SUBSCRIBER], &sub_nbr(s))? else {
                    return done(db, tx, kind, false, 1);
                };
                db.update(
                    &tx,
                    t[SUBSCRIBER],
                    &[Value::Int(id)],
                    &[(33, Value::Int(rng.gen_range(1..i32::MAX as i64)))],
                )
                .map_err(e)?;
                done(db, tx, kind, true, 2)
            }
            // UpdateSubscriberData
            94..96 => {
                let kind = "update_subscriber_data";
                let sf = rng.gen_range(1..=4);
                db.update(&tx, t[SUBSCRIBER], &[Value::Int(s)], &[(2, Value::Int(rng.gen_range(0..=1)))]).map_err(e)?;
                let found = db
                    .update(
                        &tx,
                        t[SPECIAL_FACILITY],
                        &[Value::Int(s), Value::Int(sf)],
                        &[(4, Value::Int(rng.gen_range(0..=255)))],
                    )
                    .map_err(e)?;
                done(db, tx, kind, found, 2)
            }
            // InsertCallForwarding
            96..98 => {
                let kind = "insert_call_forwarding";
                let Some(id) = self.s_id_by_number(db, &tx, t[SUBSCRIBER], &sub_nbr(s))? else {
                    return done(db, tx, kind, false, 1);
                };
                let key = [Value::Int(id)];
                let facilities = db.scan(&tx, t[SPECIAL_FACILITY], &key, &key).map_err(e)?;
                let Some(f) = facilities.get(rng.gen_range(0..facilities.len().max(1))) else {
                    return done(db, tx, kind, false, 2);
                };
                let start = [0, 8, 16][rng.gen_range(0..3)];
                let row = [
                    Value::Int(id),
                    f[1].clone(),
                    Value::Int(start),
                    Value::Int(start + rng.gen_range(1..=8)),
                    sub_nbr(self.s_id(rng)),
                ];
                match db.insert(&tx, t[CALL_FORWARDING], &row) {
                    Ok(_) => done(db, tx, kind, true, 3),
                    Err(engine::Error::Duplicate { .. }) => done(db, tx, kind, false, 3),
                    Err(err) => Err(e(err)),
                }
            }
            // DeleteCallForwarding
            _ => {
                let kind = "delete_call_forwarding";
                let Some(id) = self.s_id_by_number(db, &tx, t[SUBSCRIBER], &sub_nbr(s))? else {
                    return done(db, tx, kind, false, 1);
                };
                let key =
                    [Value::Int(id), Value::Int(rng.gen_range(1..=4)), Value::Int([0, 8, 16][rng.gen_range(0..3)])];
                let found = db.delete(&tx, t[CALL_FORWARDING], &key).map_err(e)?;
                done(db, tx, kind, found, 2)
            }
        }
    }

    /// Referential checks: every subscriber has 1–4 access_info and special_facility
    /// rows, and every call_forwarding row belongs to a special_facility row.
    fn check(&mut self, db: &mut Database) -> Result<(), String> {
        let t = self.ids(db)?;
        let tx = db.begin();
        // One row at a time: only what the checks keep (a set and a count per
        // subscriber) is in memory, not the tables.
        let mut subscribers = 0;
        db.for_each_row(&tx, t[SUBSCRIBER], |_| subscribers += 1).map_err(e)?;
        if subscribers != self.subscribers {
            return Err(format!("{subscribers} subscribers, loaded {}", self.subscribers));
        }
        let mut facilities = std::collections::HashSet::new();
        db.for_each_row(&tx, t[SPECIAL_FACILITY], |r| {
            facilities.insert((int(&r[0]), int(&r[1])));
        })
        .map_err(e)?;
        let mut orphan = FirstProblem::default();
        db.for_each_row(&tx, t[CALL_FORWARDING], |c| {
            let (s, f, start) = (int(&c[0]), int(&c[1]), int(&c[2]));
            if !facilities.contains(&(s, f)) {
                orphan.note((s, f, start), || format!("call_forwarding ({s}, {f}, {start}) has no special_facility"));
            }
        })
        .map_err(e)?;
        orphan.result()?;
        let mut per: std::collections::HashMap<i64, u32> = std::collections::HashMap::new();
        db.for_each_row(&tx, t[ACCESS_INFO], |a| *per.entry(int(&a[0])).or_default() += 1).map_err(e)?;
        if per.len() as i64 != self.subscribers || per.values().any(|&n| !(1..=4).contains(&n)) {
            return Err("access_info: a subscriber without 1 to 4 rows".into());
        }
        db.commit(tx).map_err(e)?;
        Ok(())
    }
}
