//! TPC-C (revision 5.11, clauses 1–2 and 4.3): nine tables, the five transactions with
//! the 45/43/4/4/4 mix, NURand with load and run constants, 1% of NewOrders rolled back
//! on an unused item, a home warehouse per terminal, customers found by last name
//! through a secondary index. Consistency conditions 1–4 (clause 3.3.2) are checked.
//!
//! Simplifications, all without effect on which rows and bytes change: dates are
//! simulated nanoseconds, text columns are filled with deterministic random letters,
//! keying and think times are not modelled (the driver's terminals are closed loops).

use crate::limits::CountRange;
use crate::params::WorkloadParams;
use crate::workload::{TxOutcome, TxResult, Workload, WorkloadError};
use crate::{err as e, int};
use engine::db::TableId;
use engine::types::Value;
use engine::Database;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub const DISTRICTS: i64 = 10;
pub const CUSTOMERS: i64 = 3000;
pub const ITEMS: i64 = 100_000;
const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// The transaction mix in percent: NewOrder, Payment, OrderStatus, Delivery, StockLevel.
#[derive(Clone, Copy, Debug)]
pub struct Mix(pub [u32; 5]);

impl Mix {
    pub const STANDARD: Mix = Mix([45, 43, 4, 4, 4]);
}

/// Warehouses.
pub const WAREHOUSES: CountRange = CountRange { min: 1, max: u32::MAX as u64 };
/// One share of the mix, in percent.
pub const MIX_SHARE: CountRange = CountRange { min: 0, max: 100 };

/// TPC-C's parameters in an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpccParams {
    pub warehouses: u32,
    /// Percent: NewOrder, Payment, OrderStatus, Delivery, StockLevel.
    pub mix: [u32; 5],
    /// Money and rate columns as 8-byte floats ([`FLOAT_MONEY_COLUMNS`]), as shore-kits,
    /// the Shore-MT benchmark kit, declares them (`SQL_FLOAT`); otherwise DECIMAL.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub float_money: bool,
}

impl Default for TpccParams {
    fn default() -> Self {
        TpccParams { warehouses: 1, mix: Mix::STANDARD.0, float_money: false }
    }
}

impl WorkloadParams for TpccParams {
    const NAME: &'static str = "tpcc";
    const ABOUT: &'static str = "TPC-C: the five order-entry transactions, 45/43/4/4/4 by default";
    const LEFT_OUT: &'static [&'static str] = &["float_money"];

    fn check(&self) -> Result<(), (&'static str, String)> {
        WAREHOUSES.check(self.warehouses.into()).map_err(|p| ("warehouses", p))?;
        for share in self.mix {
            MIX_SHARE.check(share.into()).map_err(|p| ("mix", format!("each percentage {p}")))?;
        }
        if self.mix.iter().sum::<u32>() == 0 {
            return Err(("mix", "the percentages sum to 0".into()));
        }
        Ok(())
    }

    fn size(&self) -> String {
        format!("{} warehouse{}", self.warehouses, if self.warehouses == 1 { "" } else { "s" })
    }

    fn build(&self, rng: &mut ChaCha8Rng) -> Box<dyn Workload> {
        let mut tpcc = Tpcc::new(self.warehouses.into(), Mix(self.mix), rng);
        tpcc.float_money = self.float_money;
        Box::new(tpcc)
    }
}

/// NURand constants (clause 2.1.6): C for c_last, c_id and ol_i_id.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Constants {
    pub(crate) c_last: i64,
    pub(crate) c_id: i64,
    pub(crate) ol_i_id: i64,
}

impl Constants {
    /// The load's and the run's NURand constants: the run's C_LAST differs from the
    /// load's by 65..=119, but not 96 or 112 (clause 2.1.6.1).
    pub(crate) fn draw(rng: &mut ChaCha8Rng) -> (Constants, Constants) {
        let load = Constants {
            c_last: rng.gen_range(0..=255),
            c_id: rng.gen_range(0..=1023),
            ol_i_id: rng.gen_range(0..=8191),
        };
        let delta = loop {
            let d = rng.gen_range(65..=119);
            if d != 96 && d != 112 {
                break d;
            }
        };
        let run = Constants {
            c_last: (load.c_last + delta) % 256,
            c_id: rng.gen_range(0..=1023),
            ol_i_id: rng.gen_range(0..=8191),
        };
        (load, run)
    }
}

pub struct Tpcc {
    pub warehouses: i64,
    pub mix: Mix,
    /// [`TpccParams::float_money`].
    pub float_money: bool,
    load: Constants,
    run: Constants,
    tables: Option<Tables>,
}

#[derive(Clone, Copy)]
struct Tables {
    warehouse: TableId,
    district: TableId,
    customer: TableId,
    history: TableId,
    new_order: TableId,
    orders: TableId,
    order_line: TableId,
    item: TableId,
    stock: TableId,
}

fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

pub(crate) fn nurand(rng: &mut ChaCha8Rng, a: i64, x: i64, y: i64, c: i64) -> i64 {
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

pub(crate) fn last_name(n: i64) -> String {
    let n = n as usize;
    format!("{}{}{}", SYLLABLES[n / 100], SYLLABLES[n / 10 % 10], SYLLABLES[n % 10])
}

pub(crate) fn letters(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> String {
    let n = rng.gen_range(lo..=hi);
    (0..n).map(|_| (b'a' + rng.gen_range(0..26u8)) as char).collect()
}

pub(crate) fn zip(rng: &mut ChaCha8Rng) -> String {
    format!("{:04}11111", rng.gen_range(0..10000))
}

fn dec(scaled: i64, scale: u8) -> Value {
    Value::Decimal { scaled, scale }
}

/// The column types shore-kits (the Shore-MT benchmark kit) declares `SQL_FLOAT` where
/// ours are DECIMAL: warehouse and district tax and year-to-date, the customer's credit
/// limit, discount, balance and year-to-date payment, the history's amount
/// (`shore_tpcc_schema.cpp`). Its order-line amount and item price are `SQL_INT`, as
/// ours are scaled integers; its dates (`SQL_FLOAT`) and its extra `C_LAST_PAYMENT`
/// column are not followed.
pub const FLOAT_MONEY_COLUMNS: [(&str, &str); 3] =
    [("DECIMAL(4,4)", "FLOAT"), ("DECIMAL(12,2)", "FLOAT"), ("h_amount DECIMAL(6,2)", "h_amount FLOAT")];

/// A money value in cents, from a DECIMAL(_, 2) or a FLOAT column.
fn cents(v: &Value) -> i64 {
    match v {
        Value::Float(f) => (f * 100.0).round() as i64,
        other => int(other),
    }
}

impl Tpcc {
    pub fn new(warehouses: i64, mix: Mix, rng: &mut ChaCha8Rng) -> Tpcc {
        let (load, run) = Constants::draw(rng);
        Tpcc { warehouses: warehouses.max(1), mix, load, run, float_money: false, tables: None }
    }

    fn tables(&mut self, db: &Database) -> Result<Tables, WorkloadError> {
        if let Some(t) = self.tables {
            return Ok(t);
        }
        let id = |n: &str| db.table_id(n).map_err(e);
        let t = Tables {
            warehouse: id("warehouse")?,
            district: id("district")?,
            customer: id("customer")?,
            history: id("history")?,
            new_order: id("new_order")?,
            orders: id("orders")?,
            order_line: id("order_line")?,
            item: id("item")?,
            stock: id("stock")?,
        };
        self.tables = Some(t);
        Ok(t)
    }

    fn schema(placement: &dyn Fn(&str) -> String, float_money: bool) -> String {
        let schema = Tpcc::decimal_schema(placement);
        if !float_money {
            return schema;
        }
        FLOAT_MONEY_COLUMNS.iter().fold(schema, |s, (from, to)| s.replace(from, to))
    }

    fn decimal_schema(placement: &dyn Fn(&str) -> String) -> String {
        let dists: Vec<String> = (1..=10).map(|i| format!("s_dist_{i:02} CHAR(24)")).collect();
        format!(
            "CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2)) TABLESPACE {w};
             CREATE TABLE district (d_id INT, d_w_id INT, d_name VARCHAR(10), d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id)) TABLESPACE {d};
             CREATE TABLE customer (c_id INT, c_d_id INT, c_w_id INT, c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since BIGINT, c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id)) TABLESPACE {c};
             CREATE INDEX customer_last ON customer (c_w_id, c_d_id, c_last, c_first) TABLESPACE {c};
             CREATE TABLE history (h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT, h_date BIGINT, h_amount DECIMAL(6,2), h_data VARCHAR(24)) TABLESPACE {h};
             CREATE TABLE new_order (no_o_id INT, no_d_id INT, no_w_id INT, PRIMARY KEY (no_w_id, no_d_id, no_o_id)) TABLESPACE {n};
             CREATE TABLE orders (o_id INT, o_d_id INT, o_w_id INT, o_c_id INT, o_entry_d BIGINT, o_carrier_id INT, o_ol_cnt INT, o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id)) TABLESPACE {o};
             CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id) TABLESPACE {o};
             CREATE TABLE order_line (ol_o_id INT, ol_d_id INT, ol_w_id INT, ol_number INT, ol_i_id INT, ol_supply_w_id INT, ol_delivery_d BIGINT, ol_quantity INT, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)) TABLESPACE {l};
             CREATE TABLE item (i_id INT PRIMARY KEY, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50)) TABLESPACE {i};
             CREATE TABLE stock (s_i_id INT, s_w_id INT, s_quantity INT, {dists}, s_ytd INT, s_order_cnt INT, s_remote_cnt INT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id)) TABLESPACE {s};",
            w = placement("warehouse"),
            d = placement("district"),
            c = placement("customer"),
            h = placement("history"),
            n = placement("new_order"),
            o = placement("orders"),
            l = placement("order_line"),
            i = placement("item"),
            s = placement("stock"),
            dists = dists.join(", "),
        )
    }

    fn address(rng: &mut ChaCha8Rng) -> [Value; 5] {
        [
            Value::Text(letters(rng, 10, 20)),
            Value::Text(letters(rng, 10, 20)),
            Value::Text(letters(rng, 10, 20)),
            Value::Text(letters(rng, 2, 2)),
            Value::Text(zip(rng)),
        ]
    }

    fn data(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> String {
        let mut s = letters(rng, lo, hi);
        if rng.gen_bool(0.1) && s.len() >= 8 {
            let at = rng.gen_range(0..=s.len() - 8);
            s.replace_range(at..at + 8, "ORIGINAL");
        }
        s
    }

    /// The customer's primary key: 60% by last name (the middle of those with it, by
    /// first name), else by id.
    fn find_customer(
        &self,
        db: &mut Database,
        tx: &engine::db::Transaction,
        t: &Tables,
        w: i64,
        d: i64,
        rng: &mut ChaCha8Rng,
    ) -> Result<Option<Vec<Value>>, WorkloadError> {
        if rng.gen_bool(0.6) {
            let last = Value::Text(last_name(nurand(rng, 255, 0, 999, self.run.c_last)));
            let key = [Value::Int(w), Value::Int(d), last];
            let rows = db.scan_index(tx, t.customer, "customer_last", &key, &key, usize::MAX).map_err(e)?;
            if rows.is_empty() {
                return Ok(None);
            }
            let pick = (rows.len() - 1) / 2;
            return Ok(Some(rows[pick].clone()));
        }
        let c = nurand(rng, 1023, 1, CUSTOMERS, self.run.c_id);
        db.get(tx, t.customer, &[Value::Int(w), Value::Int(d), Value::Int(c)]).map_err(e)
    }

    fn new_order(&mut self, db: &mut Database, w: i64, rng: &mut ChaCha8Rng) -> Result<TxOutcome, WorkloadError> {
        let t = self.tables(db)?;
        let d = rng.gen_range(1..=DISTRICTS);
        let c = nurand(rng, 1023, 1, CUSTOMERS, self.run.c_id);
        let lines = rng.gen_range(5..=15);
        let rollback = rng.gen_range(1..=100) == 1;
        let tx = db.begin();
        let mut ops = 3;
        // w_tax; c_last, c_credit, c_discount: the columns NewOrder reads.
        db.get_columns(&tx, t.warehouse, &[Value::Int(w)], &[7]).map_err(e)?.ok_or("warehouse missing")?;
        let mut o_id = 0;
        db.update_columns(&tx, t.district, &[Value::Int(w), Value::Int(d)], &[10], |next_o_id| {
            o_id = int(&next_o_id[0]);
            Ok([(10, Value::Int(o_id + 1))])
        })
        .map_err(e)?
        .ok_or("district missing")?;
        db.get_columns(&tx, t.customer, &[Value::Int(w), Value::Int(d), Value::Int(c)], &[5, 13, 15])
            .map_err(e)?
            .ok_or("customer missing")?;
        let mut all_local = 1;
        let mut items = Vec::with_capacity(lines as usize);
        for n in 1..=lines {
            let mut item = nurand(rng, 8191, 1, ITEMS, self.run.ol_i_id);
            if rollback && n == lines {
                item = ITEMS + 1; // unused: the transaction rolls back (2.4.1.4)
            }
            let supply = if self.warehouses > 1 && rng.gen_range(1..=100) == 1 {
                all_local = 0;
                let other = rng.gen_range(1..self.warehouses);
                if other >= w {
                    other + 1
                } else {
                    other
                }
            } else {
                w
            };
            items.push((item, supply, rng.gen_range(1..=10i64)));
        }
        let now = db.now() as i64;
        let order = [
            Value::Int(o_id),
            Value::Int(d),
            Value::Int(w),
            Value::Int(c),
            Value::Int(now),
            Value::Null,
            Value::Int(lines),
            Value::Int(all_local),
        ];
        db.insert(&tx, t.orders, &order).map_err(e)?;
        db.insert(&tx, t.new_order, &[Value::Int(o_id), Value::Int(d), Value::Int(w)]).map_err(e)?;
        ops += 2;
        for (n, (item, supply, quantity)) in items.into_iter().enumerate() {
            // i_price, i_name, i_data.
            let Some(row) = db.get_columns(&tx, t.item, &[Value::Int(item)], &[3, 2, 4]).map_err(e)? else {
                db.abort(tx).map_err(e)?;
                return Ok(TxOutcome { committed: false, operations: ops + 1, kind: "new_order" });
            };
            let price = int(&row[0]);
            let remote = i64::from(supply != w);
            // s_quantity, s_ytd, s_order_cnt, s_remote_cnt and the district's s_dist_xx.
            let read = [2, 13, 14, 15, 2 + d as usize];
            let mut stock = db
                .update_columns(&tx, t.stock, &[Value::Int(supply), Value::Int(item)], &read, |stock| {
                    let s_quantity = int(&stock[0]);
                    let new_quantity =
                        if s_quantity >= quantity + 10 { s_quantity - quantity } else { s_quantity - quantity + 91 };
                    Ok([
                        (2, Value::Int(new_quantity)),
                        (13, Value::Int(int(&stock[1]) + quantity)),
                        (14, Value::Int(int(&stock[2]) + 1)),
                        (15, Value::Int(int(&stock[3]) + remote)),
                    ])
                })
                .map_err(e)?
                .ok_or("stock missing")?;
            let dist_info = std::mem::replace(&mut stock[4], Value::Null);
            let line = [
                Value::Int(o_id),
                Value::Int(d),
                Value::Int(w),
                Value::Int(n as i64 + 1),
                Value::Int(item),
                Value::Int(supply),
                Value::Null,
                Value::Int(quantity),
                dec(price * quantity, 2),
                dist_info,
            ];
            db.insert(&tx, t.order_line, &line).map_err(e)?;
            ops += 4;
        }
        db.commit(tx).map_err(e)?;
        Ok(TxOutcome { committed: true, operations: ops, kind: "new_order" })
    }

    fn payment(&mut self, db: &mut Database, w: i64, rng: &mut ChaCha8Rng) -> Result<TxOutcome, WorkloadError> {
        let t = self.tables(db)?;
        let d = rng.gen_range(1..=DISTRICTS);
        let (c_w, c_d) = if self.warehouses == 1 || rng.gen_range(1..=100) <= 85 {
            (w, d)
        } else {
            let other = rng.gen_range(1..self.warehouses);
            (if other >= w { other + 1 } else { other }, rng.gen_range(1..=DISTRICTS))
        };
        let amount = rng.gen_range(100..=500_000i64); // cents: 1.00 .. 5000.00
        let tx = db.begin();
        // Year-to-date sums grow by the amount; the names stay for the history row.
        // w_ytd and w_name, d_ytd and d_name.
        let wh = db
            .update_columns(&tx, t.warehouse, &[Value::Int(w)], &[8, 1], |wh| Ok([(8, dec(cents(&wh[0]) + amount, 2))]))
            .map_err(e)?
            .ok_or("warehouse missing")?;
        let di = db
            .update_columns(&tx, t.district, &[Value::Int(w), Value::Int(d)], &[9, 2], |di| {
                Ok([(9, dec(cents(&di[0]) + amount, 2))])
            })
            .map_err(e)?
            .ok_or("district missing")?;
        let Some(cust) = self.find_customer(db, &tx, &t, c_w, c_d, rng)? else {
            db.abort(tx).map_err(e)?;
            return Ok(TxOutcome { committed: false, operations: 4, kind: "payment" });
        };
        let c = int(&cust[0]);
        let key = [Value::Int(c_w), Value::Int(c_d), Value::Int(c)];
        let mut sets = vec![
            (16, dec(cents(&cust[16]) - amount, 2)),
            (17, dec(cents(&cust[17]) + amount, 2)),
            (18, Value::Int(int(&cust[18]) + 1)),
        ];
        if text(&cust[13]) == "BC" {
            let mut data = format!("{c} {c_d} {c_w} {d} {w} {amount} {}", text(&cust[20]));
            data.truncate(500);
            sets.push((20, Value::Text(data)));
        }
        db.update(&tx, t.customer, &key, &sets).map_err(e)?;
        let h_data = format!("{}    {}", text(&wh[1]), text(&di[1]));
        let history = [
            Value::Int(c),
            Value::Int(c_d),
            Value::Int(c_w),
            Value::Int(d),
            Value::Int(w),
            Value::Int(db.now() as i64),
            dec(amount, 2),
            Value::Text(h_data.chars().take(24).collect()),
        ];
        db.insert(&tx, t.history, &history).map_err(e)?;
        db.commit(tx).map_err(e)?;
        Ok(TxOutcome { committed: true, operations: 8, kind: "payment" })
    }

    fn order_status(&mut self, db: &mut Database, w: i64, rng: &mut ChaCha8Rng) -> Result<TxOutcome, WorkloadError> {
        let t = self.tables(db)?;
        let d = rng.gen_range(1..=DISTRICTS);
        let tx = db.begin();
        let Some(cust) = self.find_customer(db, &tx, &t, w, d, rng)? else {
            db.commit(tx).map_err(e)?;
            return Ok(TxOutcome { committed: true, operations: 1, kind: "order_status" });
        };
        let key = [Value::Int(w), Value::Int(d), cust[0].clone()];
        let orders = db.scan_index(&tx, t.orders, "orders_customer", &key, &key, usize::MAX).map_err(e)?;
        let mut ops = 1 + orders.len() as u32;
        if let Some(last) = orders.last() {
            let lines_key = [Value::Int(w), Value::Int(d), last[0].clone()];
            ops += db.scan(&tx, t.order_line, &lines_key, &lines_key).map_err(e)?.len() as u32;
        }
        db.commit(tx).map_err(e)?;
        Ok(TxOutcome { committed: true, operations: ops, kind: "order_status" })
    }

    fn delivery(&mut self, db: &mut Database, w: i64, rng: &mut ChaCha8Rng) -> Result<TxOutcome, WorkloadError> {
        let t = self.tables(db)?;
        let carrier = rng.gen_range(1..=10i64);
        let tx = db.begin();
        let mut ops = 0;
        for d in 1..=DISTRICTS {
            let key = [Value::Int(w), Value::Int(d)];
            let oldest = db.scan_index(&tx, t.new_order, "new_order_pkey", &key, &key, 1).map_err(e)?;
            // A district with no new order is skipped, but its probe is an operation:
            // else a run of nothing but Deliveries would stop the clock once they are gone.
            let Some(no) = oldest.first() else {
                ops += 1;
                continue;
            };
            let o_id = no[0].clone();
            db.delete(&tx, t.new_order, &[Value::Int(w), Value::Int(d), o_id.clone()]).map_err(e)?;
            let okey = [Value::Int(w), Value::Int(d), o_id.clone()];
            // o_carrier_id set, o_c_id read.
            let order = db
                .update_columns(&tx, t.orders, &okey, &[3], |_| Ok([(5, Value::Int(carrier))]))
                .map_err(e)?
                .ok_or("order missing")?;
            let lines = db.scan(&tx, t.order_line, &okey, &okey).map_err(e)?;
            let now = db.now() as i64;
            let mut total = 0;
            for l in &lines {
                total += int(&l[8]);
                let lkey = [Value::Int(w), Value::Int(d), o_id.clone(), l[3].clone()];
                db.update(&tx, t.order_line, &lkey, &[(6, Value::Int(now))]).map_err(e)?;
            }
            let ckey = [Value::Int(w), Value::Int(d), order[0].clone()];
            db.update_columns(&tx, t.customer, &ckey, &[16, 19], |cust| {
                Ok([(16, dec(cents(&cust[0]) + total, 2)), (19, Value::Int(int(&cust[1]) + 1))])
            })
            .map_err(e)?
            .ok_or("customer missing")?;
            ops += 6 + 2 * lines.len() as u32;
        }
        db.commit(tx).map_err(e)?;
        Ok(TxOutcome { committed: true, operations: ops, kind: "delivery" })
    }

    fn stock_level(
        &mut self,
        db: &mut Database,
        w: i64,
        terminal: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<TxOutcome, WorkloadError> {
        let t = self.tables(db)?;
        let d = (terminal as i64 / self.warehouses) % DISTRICTS + 1;
        let threshold = rng.gen_range(10..=20i64);
        let tx = db.begin();
        let district =
            db.get(&tx, t.district, &[Value::Int(w), Value::Int(d)]).map_err(e)?.ok_or("district missing")?;
        let next = int(&district[10]);
        let lo = [Value::Int(w), Value::Int(d), Value::Int(next - 20)];
        let hi = [Value::Int(w), Value::Int(d), Value::Int(next - 1)];
        let lines = db.scan(&tx, t.order_line, &lo, &hi).map_err(e)?;
        let mut items: Vec<i64> = lines.iter().map(|l| int(&l[4])).collect();
        items.sort_unstable();
        items.dedup();
        // The count of items below the threshold is the transaction's output.
        for &i in &items {
            let stock = db.get_columns(&tx, t.stock, &[Value::Int(w), Value::Int(i)], &[2]).map_err(e)?;
            std::hint::black_box(stock.is_some_and(|s| int(&s[0]) < threshold));
        }
        db.commit(tx).map_err(e)?;
        Ok(TxOutcome { committed: true, operations: 1 + lines.len() as u32 + items.len() as u32, kind: "stock_level" })
    }

    /// Rows of a table for one SQL-free check: all of them, by primary key order.
    fn all(db: &mut Database, t: TableId) -> Result<Vec<Vec<Value>>, WorkloadError> {
        let tx = db.begin();
        let rows = db.scan(&tx, t, &[], &[]).map_err(e)?;
        db.commit(tx).map_err(e)?;
        Ok(rows)
    }
}

impl Workload for Tpcc {
    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn tables(&self) -> Vec<&'static str> {
        vec!["warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock"]
    }

    fn load(
        &mut self,
        db: &mut Database,
        placement: &dyn Fn(&str) -> String,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), WorkloadError> {
        db.execute(&Tpcc::schema(placement, self.float_money)).map_err(e)?;
        let t = self.tables(db)?;
        let mut tx = db.begin();
        let mut pending = 0;
        let mut put = |db: &mut Database,
                       tx: &mut engine::db::Transaction,
                       table: TableId,
                       row: &[Value]|
         -> Result<(), WorkloadError> {
            db.insert(tx, table, row).map_err(e)?;
            pending += 1;
            if pending % 1000 == 0 {
                let done = std::mem::replace(tx, db.begin());
                db.commit(done).map_err(e)?;
            }
            Ok(())
        };
        for i in 1..=ITEMS {
            let row = [
                Value::Int(i),
                Value::Int(rng.gen_range(1..=10_000)),
                Value::Text(letters(rng, 14, 24)),
                dec(rng.gen_range(100..=10_000), 2),
                Value::Text(Tpcc::data(rng, 26, 50)),
            ];
            put(db, &mut tx, t.item, &row)?;
        }
        for w in 1..=self.warehouses {
            let [s1, s2, city, state, zip] = Tpcc::address(rng);
            let row = [
                Value::Int(w),
                Value::Text(letters(rng, 6, 10)),
                s1,
                s2,
                city,
                state,
                zip,
                dec(rng.gen_range(0..=2000), 4),
                dec(30_000_000, 2),
            ];
            put(db, &mut tx, t.warehouse, &row)?;
            for i in 1..=ITEMS {
                let mut row = vec![Value::Int(i), Value::Int(w), Value::Int(rng.gen_range(10..=100))];
                row.extend((0..10).map(|_| Value::Text(letters(rng, 24, 24))));
                row.extend([Value::Int(0), Value::Int(0), Value::Int(0), Value::Text(Tpcc::data(rng, 26, 50))]);
                put(db, &mut tx, t.stock, &row)?;
            }
            for d in 1..=DISTRICTS {
                let [s1, s2, city, state, zip] = Tpcc::address(rng);
                let row = [
                    Value::Int(d),
                    Value::Int(w),
                    Value::Text(letters(rng, 6, 10)),
                    s1,
                    s2,
                    city,
                    state,
                    zip,
                    dec(rng.gen_range(0..=2000), 4),
                    dec(3_000_000, 2),
                    Value::Int(CUSTOMERS + 1),
                ];
                put(db, &mut tx, t.district, &row)?;
                for c in 1..=CUSTOMERS {
                    let last = if c <= 1000 {
                        last_name(c - 1)
                    } else {
                        last_name(nurand(rng, 255, 0, 999, self.load.c_last))
                    };
                    let [s1, s2, city, state, zip] = Tpcc::address(rng);
                    let credit = if rng.gen_range(1..=10) == 1 { "BC" } else { "GC" };
                    let row = [
                        Value::Int(c),
                        Value::Int(d),
                        Value::Int(w),
                        Value::Text(letters(rng, 8, 16)),
                        Value::Text("OE".into()),
                        Value::Text(last),
                        s1,
                        s2,
                        city,
                        state,
                        zip,
                        Value::Text(format!("{:016}", rng.gen_range(0..10_000_000_000_000_000u64))),
                        Value::Int(0),
                        Value::Text(credit.into()),
                        dec(5_000_000, 2),
                        dec(rng.gen_range(0..=5000), 4),
                        dec(-1000, 2),
                        dec(1000, 2),
                        Value::Int(1),
                        Value::Int(0),
                        Value::Text(letters(rng, 300, 500)),
                    ];
                    put(db, &mut tx, t.customer, &row)?;
                    let history = [
                        Value::Int(c),
                        Value::Int(d),
                        Value::Int(w),
                        Value::Int(d),
                        Value::Int(w),
                        Value::Int(0),
                        dec(1000, 2),
                        Value::Text(letters(rng, 12, 24)),
                    ];
                    put(db, &mut tx, t.history, &history)?;
                }
                // Orders: one per customer, in a random permutation of customers.
                let mut customers: Vec<i64> = (1..=CUSTOMERS).collect();
                for i in (1..customers.len()).rev() {
                    customers.swap(i, rng.gen_range(0..=i));
                }
                for (k, &c) in customers.iter().enumerate() {
                    let o = k as i64 + 1;
                    let lines = rng.gen_range(5..=15i64);
                    let delivered = o <= 2100;
                    let carrier = if delivered { Value::Int(rng.gen_range(1..=10)) } else { Value::Null };
                    let order = [
                        Value::Int(o),
                        Value::Int(d),
                        Value::Int(w),
                        Value::Int(c),
                        Value::Int(0),
                        carrier,
                        Value::Int(lines),
                        Value::Int(1),
                    ];
                    put(db, &mut tx, t.orders, &order)?;
                    for n in 1..=lines {
                        let line = [
                            Value::Int(o),
                            Value::Int(d),
                            Value::Int(w),
                            Value::Int(n),
                            Value::Int(rng.gen_range(1..=ITEMS)),
                            Value::Int(w),
                            if delivered { Value::Int(0) } else { Value::Null },
                            Value::Int(5),
                            dec(if delivered { 0 } else { rng.gen_range(1..=999_999) }, 2),
                            Value::Text(letters(rng, 24, 24)),
                        ];
                        put(db, &mut tx, t.order_line, &line)?;
                    }
                    if !delivered {
                        put(db, &mut tx, t.new_order, &[Value::Int(o), Value::Int(d), Value::Int(w)])?;
                    }
                }
            }
        }
        db.commit(tx).map_err(e)?;
        Ok(())
    }

    fn transaction(&mut self, db: &mut Database, terminal: usize, rng: &mut ChaCha8Rng) -> TxResult {
        let w = terminal as i64 % self.warehouses + 1;
        let total: u32 = self.mix.0.iter().sum();
        let mut pick = rng.gen_range(0..total.max(1));
        let mut kind = 0;
        for (k, share) in self.mix.0.iter().enumerate() {
            if pick < *share {
                kind = k;
                break;
            }
            pick -= share;
        }
        match kind {
            0 => self.new_order(db, w, rng),
            1 => self.payment(db, w, rng),
            2 => self.order_status(db, w, rng),
            3 => self.delivery(db, w, rng),
            _ => self.stock_level(db, w, terminal, rng),
        }
    }

    /// Consistency conditions 1–4 (clause 3.3.2).
    fn check(&mut self, db: &mut Database) -> Result<(), String> {
        let t = self.tables(db)?;
        let warehouses = Tpcc::all(db, t.warehouse)?;
        let districts = Tpcc::all(db, t.district)?;
        // Orders, new orders and order lines are the bulk of the database: one pass each,
        // folded into per-district sums, so the check holds no table in memory.
        let mut per: HashMap<(i64, i64), DistrictSums> = HashMap::new();
        let tx = db.begin();
        // (warehouse, district) of an orders, new_order or order_line row: columns 2 and 1.
        let district = |r: &[Value]| (int(&r[2]), int(&r[1]));
        db.for_each_row(&tx, t.orders, |o| {
            let s = per.entry(district(o)).or_default();
            s.max_o = s.max_o.max(int(&o[0]));
            s.ol_cnt += int(&o[6]);
        })
        .map_err(e)?;
        db.for_each_row(&tx, t.new_order, |n| {
            let s = per.entry(district(n)).or_default();
            let no = int(&n[0]);
            s.new_orders = Some(s.new_orders.map_or((no, no), |(lo, hi)| (lo.min(no), hi.max(no))));
            s.new_order_rows += 1;
        })
        .map_err(e)?;
        db.for_each_row(&tx, t.order_line, |l| per.entry(district(l)).or_default().lines += 1).map_err(e)?;
        db.commit(tx).map_err(e)?;
        for wh in &warehouses {
            let w = int(&wh[0]);
            let d_ytd: i64 = districts.iter().filter(|d| int(&d[1]) == w).map(|d| cents(&d[9])).sum();
            if cents(&wh[8]) != d_ytd {
                return Err(format!("condition 1: warehouse {w} w_ytd {} != sum(d_ytd) {d_ytd}", cents(&wh[8])));
            }
        }
        for di in &districts {
            let (d, w) = (int(&di[0]), int(&di[1]));
            let s = per.get(&(w, d)).copied().unwrap_or_default();
            let next = int(&di[10]);
            let max_no = s.new_orders.map(|(_, hi)| hi);
            if next - 1 != s.max_o || max_no.is_some_and(|m| m != s.max_o) {
                return Err(format!(
                    "condition 2: district ({w}, {d}) d_next_o_id - 1 = {}, max(o_id) = {}, max(no_o_id) = {max_no:?}",
                    next - 1,
                    s.max_o
                ));
            }
            if let Some((lo, hi)) = s.new_orders {
                if hi - lo + 1 != s.new_order_rows {
                    return Err(format!(
                        "condition 3: district ({w}, {d}) new orders {lo}..={hi} but {} rows",
                        s.new_order_rows
                    ));
                }
            }
            if s.ol_cnt != s.lines {
                return Err(format!(
                    "condition 4: district ({w}, {d}) sum(o_ol_cnt) {} != order lines {}",
                    s.ol_cnt, s.lines
                ));
            }
        }
        Ok(())
    }
}

/// What the consistency check adds up per district over orders, new orders and lines.
#[derive(Clone, Copy, Debug, Default)]
struct DistrictSums {
    /// The largest o_id (0 without orders).
    max_o: i64,
    /// Sum of o_ol_cnt.
    ol_cnt: i64,
    /// Smallest and largest no_o_id.
    new_orders: Option<(i64, i64)>,
    new_order_rows: i64,
    lines: i64,
}
