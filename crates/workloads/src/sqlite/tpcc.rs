//! TPC-C (revision 5.11) in SQL on SQLite, one connection: the nine tables with their
//! primary keys and the two secondary indexes the transactions need (customer by last
//! name, orders by customer), the standard load, and the five transactions as SQL
//! statements in explicit transactions with the standard 45/43/4/4/4 mix. tpmC is the
//! committed NewOrders per simulated minute.
//!
//! The data generation is the engine's TPC-C's (`crate::tpcc`: NURand, last names,
//! random letters and zips), so both databases hold the same kind of rows. Money is
//! stored as integer cents and rates as integer 1/10,000ths, as the engine's scaled
//! decimals. With one connection each transaction draws its home warehouse (and
//! StockLevel its district) uniformly; keying and think times are not modelled.
//!
//! Consistency conditions 1–4 (clause 3.3.2) are checked in SQL.

use super::{Kind, Session, SqliteParams, SqliteWorkload};
use crate::limits::CountRange;
use crate::tpcc::{last_name, letters, nurand, zip, Constants, Mix, CUSTOMERS, DISTRICTS, ITEMS, MIX_SHARE};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub const WAREHOUSES: CountRange = CountRange { min: 1, max: 10_000 };
pub const TRANSACTIONS: CountRange = CountRange { min: 1, max: 1 << 40 };
/// Rows per load transaction.
const LOAD_BATCH: u64 = 10_000;

const NEW_ORDER: Kind = 0;
const PAYMENT: Kind = 1;
const ORDER_STATUS: Kind = 2;
const DELIVERY: Kind = 3;
const STOCK_LEVEL: Kind = 4;
const KINDS: &[&str] = &["new_order", "payment", "order_status", "delivery", "stock_level"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpccSqlParams {
    pub warehouses: u32,
    /// Percent: NewOrder, Payment, OrderStatus, Delivery, StockLevel.
    pub mix: [u32; 5],
    /// Transactions measured.
    pub transactions: u64,
}

impl Default for TpccSqlParams {
    fn default() -> Self {
        TpccSqlParams { warehouses: 4, mix: Mix::STANDARD.0, transactions: 10_000 }
    }
}

impl SqliteParams for TpccSqlParams {
    const NAME: &'static str = "tpcc";
    const ABOUT: &'static str = "TPC-C in SQL: the five order-entry transactions, 45/43/4/4/4 by default; tpmC";

    fn check(&self) -> Result<(), (&'static str, String)> {
        WAREHOUSES.check(self.warehouses.into()).map_err(|p| ("warehouses", p))?;
        TRANSACTIONS.check(self.transactions).map_err(|p| ("transactions", p))?;
        for share in self.mix {
            MIX_SHARE.check(share.into()).map_err(|p| ("mix", format!("each percentage {p}")))?;
        }
        if self.mix.iter().sum::<u32>() == 0 {
            return Err(("mix", "the percentages sum to 0".into()));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn SqliteWorkload> {
        Box::new(TpccSql::new(self.clone()))
    }
}

const SCHEMA: &str = "
CREATE TABLE warehouse (w_id INTEGER PRIMARY KEY, w_name TEXT, w_street_1 TEXT, w_street_2 TEXT, w_city TEXT,
  w_state TEXT, w_zip TEXT, w_tax INTEGER, w_ytd INTEGER);
CREATE TABLE district (d_id INTEGER, d_w_id INTEGER, d_name TEXT, d_street_1 TEXT, d_street_2 TEXT, d_city TEXT,
  d_state TEXT, d_zip TEXT, d_tax INTEGER, d_ytd INTEGER, d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id));
CREATE TABLE customer (c_id INTEGER, c_d_id INTEGER, c_w_id INTEGER, c_first TEXT, c_middle TEXT, c_last TEXT,
  c_street_1 TEXT, c_street_2 TEXT, c_city TEXT, c_state TEXT, c_zip TEXT, c_phone TEXT, c_since INTEGER,
  c_credit TEXT, c_credit_lim INTEGER, c_discount INTEGER, c_balance INTEGER, c_ytd_payment INTEGER,
  c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data TEXT, PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE INDEX customer_last ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE TABLE history (h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER,
  h_date INTEGER, h_amount INTEGER, h_data TEXT);
CREATE TABLE new_order (no_o_id INTEGER, no_d_id INTEGER, no_w_id INTEGER, PRIMARY KEY (no_w_id, no_d_id, no_o_id));
CREATE TABLE orders (o_id INTEGER, o_d_id INTEGER, o_w_id INTEGER, o_c_id INTEGER, o_entry_d INTEGER,
  o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER, PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE order_line (ol_o_id INTEGER, ol_d_id INTEGER, ol_w_id INTEGER, ol_number INTEGER, ol_i_id INTEGER,
  ol_supply_w_id INTEGER, ol_delivery_d INTEGER, ol_quantity INTEGER, ol_amount INTEGER, ol_dist_info TEXT,
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_im_id INTEGER, i_name TEXT, i_price INTEGER, i_data TEXT);
CREATE TABLE stock (s_i_id INTEGER, s_w_id INTEGER, s_quantity INTEGER, s_dist_01 TEXT, s_dist_02 TEXT,
  s_dist_03 TEXT, s_dist_04 TEXT, s_dist_05 TEXT, s_dist_06 TEXT, s_dist_07 TEXT, s_dist_08 TEXT, s_dist_09 TEXT,
  s_dist_10 TEXT, s_ytd INTEGER, s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data TEXT,
  PRIMARY KEY (s_w_id, s_i_id));
";

pub struct TpccSql {
    p: TpccSqlParams,
    warehouses: i64,
    load: Constants,
    run: Constants,
    new_orders: u64,
}

/// `letters` with an "ORIGINAL" in 10% of them (i_data, s_data).
fn data(rng: &mut ChaCha8Rng) -> String {
    let mut s = letters(rng, 26, 50);
    if rng.gen_bool(0.1) {
        let at = rng.gen_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

/// Street 1, street 2, city, state, zip.
fn address(rng: &mut ChaCha8Rng) -> [String; 5] {
    [letters(rng, 10, 20), letters(rng, 10, 20), letters(rng, 10, 20), letters(rng, 2, 2), zip(rng)]
}

/// A warehouse other than `w` (there are at least two).
fn other_warehouse(rng: &mut ChaCha8Rng, warehouses: i64, w: i64) -> i64 {
    let other = rng.gen_range(1..warehouses);
    if other >= w {
        other + 1
    } else {
        other
    }
}

/// Counts statements of the load and commits every [`LOAD_BATCH`] rows.
struct Loader {
    rows: u64,
}

impl Loader {
    fn put<P: rusqlite::Params>(&mut self, s: &mut Session<'_>, sql: &str, row: P) -> Result<(), String> {
        s.exec(sql, row)?;
        self.rows += 1;
        if self.rows.is_multiple_of(LOAD_BATCH) {
            s.batch("COMMIT; BEGIN")?;
        }
        Ok(())
    }
}

impl TpccSql {
    pub fn new(p: TpccSqlParams) -> TpccSql {
        TpccSql {
            warehouses: p.warehouses.into(),
            p,
            load: Constants::default(),
            run: Constants::default(),
            new_orders: 0,
        }
    }

    /// Draws the load's and the run's NURand constants ([`Constants::draw`]).
    fn constants(&mut self, rng: &mut ChaCha8Rng) {
        (self.load, self.run) = Constants::draw(rng);
    }

    fn load_warehouse(&self, s: &mut Session<'_>, l: &mut Loader, w: i64, rng: &mut ChaCha8Rng) -> Result<(), String> {
        let [s1, s2, city, state, zip] = address(rng);
        l.put(
            s,
            "INSERT INTO warehouse VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![w, letters(rng, 6, 10), s1, s2, city, state, zip, rng.gen_range(0..=2000), 30_000_000],
        )?;
        for i in 1..=ITEMS {
            let mut row: Vec<rusqlite::types::Value> = vec![i.into(), w.into(), rng.gen_range(10..=100i64).into()];
            row.extend((0..10).map(|_| letters(rng, 24, 24).into()));
            row.extend([0i64.into(), 0i64.into(), 0i64.into(), data(rng).into()]);
            l.put(
                s,
                "INSERT INTO stock VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                rusqlite::params_from_iter(row),
            )?;
        }
        for d in 1..=DISTRICTS {
            let [s1, s2, city, state, zip] = address(rng);
            l.put(
                s,
                "INSERT INTO district VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                rusqlite::params![
                    d,
                    w,
                    letters(rng, 6, 10),
                    s1,
                    s2,
                    city,
                    state,
                    zip,
                    rng.gen_range(0..=2000),
                    3_000_000,
                    CUSTOMERS + 1
                ],
            )?;
            for c in 1..=CUSTOMERS {
                let last =
                    if c <= 1000 { last_name(c - 1) } else { last_name(nurand(rng, 255, 0, 999, self.load.c_last)) };
                let [s1, s2, city, state, zip] = address(rng);
                let credit = if rng.gen_range(1..=10) == 1 { "BC" } else { "GC" };
                let row: Vec<rusqlite::types::Value> = vec![
                    c.into(),
                    d.into(),
                    w.into(),
                    letters(rng, 8, 16).into(),
                    "OE".to_string().into(),
                    last.into(),
                    s1.into(),
                    s2.into(),
                    city.into(),
                    state.into(),
                    zip.into(),
                    format!("{:016}", rng.gen_range(0..10_000_000_000_000_000u64)).into(),
                    0i64.into(),
                    credit.to_string().into(),
                    5_000_000i64.into(),
                    rng.gen_range(0..=5000i64).into(),
                    (-1000i64).into(),
                    1000i64.into(),
                    1i64.into(),
                    0i64.into(),
                    letters(rng, 300, 500).into(),
                ];
                l.put(
                    s,
                    "INSERT INTO customer VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
                     ?16, ?17, ?18, ?19, ?20, ?21)",
                    rusqlite::params_from_iter(row),
                )?;
                l.put(
                    s,
                    "INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    rusqlite::params![c, d, w, d, w, 0, 1000, letters(rng, 12, 24)],
                )?;
            }
            // Orders: one per customer, in a random permutation of the customers.
            let mut customers: Vec<i64> = (1..=CUSTOMERS).collect();
            for i in (1..customers.len()).rev() {
                customers.swap(i, rng.gen_range(0..=i));
            }
            for (k, &c) in customers.iter().enumerate() {
                let o = k as i64 + 1;
                let lines = rng.gen_range(5..=15i64);
                let delivered = o <= 2100;
                let carrier = delivered.then(|| rng.gen_range(1..=10i64));
                l.put(
                    s,
                    "INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    rusqlite::params![o, d, w, c, 0, carrier, lines, 1],
                )?;
                for n in 1..=lines {
                    let amount = if delivered { 0 } else { rng.gen_range(1..=999_999i64) };
                    l.put(
                        s,
                        "INSERT INTO order_line VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        rusqlite::params![
                            o,
                            d,
                            w,
                            n,
                            rng.gen_range(1..=ITEMS),
                            w,
                            delivered.then_some(0i64),
                            5,
                            amount,
                            letters(rng, 24, 24)
                        ],
                    )?;
                }
                if !delivered {
                    l.put(s, "INSERT INTO new_order VALUES (?1, ?2, ?3)", rusqlite::params![o, d, w])?;
                }
            }
        }
        Ok(())
    }

    /// The customer's id: 60% by last name (the middle one of those with it, by first
    /// name), else by NURand id. `None` when no customer has the name.
    fn find_customer(&self, s: &mut Session<'_>, w: i64, d: i64, rng: &mut ChaCha8Rng) -> Result<Option<i64>, String> {
        if rng.gen_bool(0.6) {
            let last = last_name(nurand(rng, 255, 0, 999, self.run.c_last));
            let ids = s.rows(
                "SELECT c_id FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_last = ?3 ORDER BY c_first",
                rusqlite::params![w, d, last],
                |r| r.get::<_, i64>(0),
            )?;
            return Ok(ids.get(ids.len().saturating_sub(1) / 2).copied());
        }
        Ok(Some(nurand(rng, 1023, 1, CUSTOMERS, self.run.c_id)))
    }

    fn new_order(&mut self, s: &mut Session<'_>, w: i64, rng: &mut ChaCha8Rng) -> Result<bool, String> {
        let d = rng.gen_range(1..=DISTRICTS);
        let c = nurand(rng, 1023, 1, CUSTOMERS, self.run.c_id);
        let lines = rng.gen_range(5..=15i64);
        let rollback = rng.gen_range(1..=100) == 1;
        let mut items = Vec::with_capacity(lines as usize);
        let mut all_local = 1;
        for n in 1..=lines {
            // An unused item in 1% of orders: the transaction rolls back (2.4.1.4).
            let item = if rollback && n == lines { ITEMS + 1 } else { nurand(rng, 8191, 1, ITEMS, self.run.ol_i_id) };
            let supply = if self.warehouses > 1 && rng.gen_range(1..=100) == 1 {
                all_local = 0;
                other_warehouse(rng, self.warehouses, w)
            } else {
                w
            };
            items.push((item, supply, rng.gen_range(1..=10i64)));
        }
        s.batch("BEGIN")?;
        s.one("warehouse", "SELECT w_tax FROM warehouse WHERE w_id = ?1", [w], |r| r.get::<_, i64>(0))?;
        let o_id = s.one(
            "district",
            "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ?1 AND d_id = ?2",
            [w, d],
            |r| r.get::<_, i64>(0),
        )?;
        s.exec("UPDATE district SET d_next_o_id = ?3 WHERE d_w_id = ?1 AND d_id = ?2", [w, d, o_id + 1])?;
        s.one(
            "customer",
            "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
            [w, d, c],
            |r| r.get::<_, i64>(0),
        )?;
        let now = s.host().now() as i64;
        s.exec("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)", [o_id, d, w, c, now, lines, all_local])?;
        s.exec("INSERT INTO new_order VALUES (?1, ?2, ?3)", [o_id, d, w])?;
        let dist_column = format!("s_dist_{d:02}");
        for (n, (item, supply, quantity)) in items.into_iter().enumerate() {
            let price =
                s.row("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?1", [item], |r| r.get::<_, i64>(0))?;
            let Some(price) = price else {
                s.batch("ROLLBACK")?;
                return Ok(false);
            };
            let (s_quantity, dist_info) = s.one(
                "stock",
                &format!("SELECT s_quantity, {dist_column}, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2"),
                [supply, item],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )?;
            let new_quantity =
                if s_quantity >= quantity + 10 { s_quantity - quantity } else { s_quantity - quantity + 91 };
            s.exec(
                "UPDATE stock SET s_quantity = ?3, s_ytd = s_ytd + ?4, s_order_cnt = s_order_cnt + 1, \
                 s_remote_cnt = s_remote_cnt + ?5 WHERE s_w_id = ?1 AND s_i_id = ?2",
                [supply, item, new_quantity, quantity, i64::from(supply != w)],
            )?;
            s.exec(
                "INSERT INTO order_line VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9)",
                rusqlite::params![o_id, d, w, n as i64 + 1, item, supply, quantity, price * quantity, dist_info],
            )?;
        }
        s.batch("COMMIT")?;
        self.new_orders += 1;
        Ok(true)
    }

    fn payment(&mut self, s: &mut Session<'_>, w: i64, rng: &mut ChaCha8Rng) -> Result<bool, String> {
        let d = rng.gen_range(1..=DISTRICTS);
        let (c_w, c_d) = if self.warehouses == 1 || rng.gen_range(1..=100) <= 85 {
            (w, d)
        } else {
            (other_warehouse(rng, self.warehouses, w), rng.gen_range(1..=DISTRICTS))
        };
        let amount = rng.gen_range(100..=500_000i64);
        s.batch("BEGIN")?;
        s.exec("UPDATE warehouse SET w_ytd = w_ytd + ?2 WHERE w_id = ?1", [w, amount])?;
        let w_name = s.one(
            "warehouse",
            "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?1",
            [w],
            |r| r.get::<_, String>(0),
        )?;
        s.exec("UPDATE district SET d_ytd = d_ytd + ?3 WHERE d_w_id = ?1 AND d_id = ?2", [w, d, amount])?;
        let d_name = s.one(
            "district",
            "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ?1 AND d_id = ?2",
            [w, d],
            |r| r.get::<_, String>(0),
        )?;
        let Some(c) = self.find_customer(s, c_w, c_d, rng)? else {
            s.batch("ROLLBACK")?;
            return Ok(false);
        };
        let (credit, c_data) = s.one(
            "customer",
            "SELECT c_credit, c_data, c_first, c_middle, c_last, c_balance FROM customer \
             WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
            [c_w, c_d, c],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )?;
        s.exec(
            "UPDATE customer SET c_balance = c_balance - ?4, c_ytd_payment = c_ytd_payment + ?4, \
             c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
            [c_w, c_d, c, amount],
        )?;
        if credit == "BC" {
            let mut data = format!("{c} {c_d} {c_w} {d} {w} {amount} {c_data}");
            data.truncate(500);
            s.exec(
                "UPDATE customer SET c_data = ?4 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                rusqlite::params![c_w, c_d, c, data],
            )?;
        }
        let h_data: String = format!("{w_name}    {d_name}").chars().take(24).collect();
        let now = s.host().now() as i64;
        s.exec(
            "INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![c, c_d, c_w, d, w, now, amount, h_data],
        )?;
        s.batch("COMMIT")?;
        Ok(true)
    }

    fn order_status(&mut self, s: &mut Session<'_>, w: i64, rng: &mut ChaCha8Rng) -> Result<bool, String> {
        let d = rng.gen_range(1..=DISTRICTS);
        s.batch("BEGIN")?;
        if let Some(c) = self.find_customer(s, w, d, rng)? {
            s.one(
                "customer",
                "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                [w, d, c],
                |r| r.get::<_, i64>(0),
            )?;
            let last = s.row(
                "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_c_id = ?3 \
                 ORDER BY o_id DESC LIMIT 1",
                [w, d, c],
                |r| r.get::<_, i64>(0),
            )?;
            if let Some(o_id) = last {
                s.rows(
                    "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
                     WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
                    [w, d, o_id],
                    |r| r.get::<_, i64>(0),
                )?;
            }
        }
        s.batch("COMMIT")?;
        Ok(true)
    }

    fn delivery(&mut self, s: &mut Session<'_>, w: i64, rng: &mut ChaCha8Rng) -> Result<bool, String> {
        let carrier = rng.gen_range(1..=10i64);
        s.batch("BEGIN")?;
        for d in 1..=DISTRICTS {
            let oldest = s.row(
                "SELECT no_o_id FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 ORDER BY no_o_id LIMIT 1",
                [w, d],
                |r| r.get::<_, i64>(0),
            )?;
            let Some(o_id) = oldest else { continue };
            s.exec("DELETE FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 AND no_o_id = ?3", [w, d, o_id])?;
            let c = s.one(
                "order",
                "SELECT o_c_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
                [w, d, o_id],
                |r| r.get::<_, i64>(0),
            )?;
            s.exec(
                "UPDATE orders SET o_carrier_id = ?4 WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
                [w, d, o_id, carrier],
            )?;
            let now = s.host().now() as i64;
            s.exec(
                "UPDATE order_line SET ol_delivery_d = ?4 WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
                [w, d, o_id, now],
            )?;
            let total = s.int(
                "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
                [w, d, o_id],
            )?;
            s.exec(
                "UPDATE customer SET c_balance = c_balance + ?4, c_delivery_cnt = c_delivery_cnt + 1 \
                 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                [w, d, c, total],
            )?;
        }
        s.batch("COMMIT")?;
        Ok(true)
    }

    fn stock_level(&mut self, s: &mut Session<'_>, w: i64, rng: &mut ChaCha8Rng) -> Result<bool, String> {
        let d = rng.gen_range(1..=DISTRICTS);
        let threshold = rng.gen_range(10..=20i64);
        s.batch("BEGIN")?;
        let next = s.int("SELECT d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2", [w, d])?;
        s.int(
            "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ?1 AND ol_d_id = ?2 \
             AND ol_o_id < ?3 AND ol_o_id >= ?4 AND s_w_id = ?1 AND s_i_id = ol_i_id AND s_quantity < ?5",
            [w, d, next, next - 20, threshold],
        )?;
        s.batch("COMMIT")?;
        Ok(true)
    }
}

impl SqliteWorkload for TpccSql {
    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn load(&mut self, s: &mut Session<'_>, rng: &mut ChaCha8Rng) -> Result<(), String> {
        self.constants(rng);
        s.batch(SCHEMA)?;
        s.batch("BEGIN")?;
        let mut l = Loader { rows: 0 };
        for i in 1..=ITEMS {
            l.put(
                s,
                "INSERT INTO item VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    i,
                    rng.gen_range(1..=10_000),
                    letters(rng, 14, 24),
                    rng.gen_range(100..=10_000),
                    data(rng)
                ],
            )?;
        }
        for w in 1..=self.warehouses {
            self.load_warehouse(s, &mut l, w, rng)?;
        }
        s.batch("COMMIT")
    }

    fn transactions(&self) -> u64 {
        self.p.transactions
    }

    fn transaction(&mut self, s: &mut Session<'_>, _n: u64, rng: &mut ChaCha8Rng) -> Result<(Kind, bool), String> {
        let w = rng.gen_range(1..=self.warehouses);
        let total: u32 = self.p.mix.iter().sum();
        let mut pick = rng.gen_range(0..total.max(1));
        let mut kind = STOCK_LEVEL;
        for (k, &share) in self.p.mix.iter().enumerate() {
            if pick < share {
                kind = k;
                break;
            }
            pick -= share;
        }
        let committed = match kind {
            NEW_ORDER => self.new_order(s, w, rng)?,
            PAYMENT => self.payment(s, w, rng)?,
            ORDER_STATUS => self.order_status(s, w, rng)?,
            DELIVERY => self.delivery(s, w, rng)?,
            _ => self.stock_level(s, w, rng)?,
        };
        Ok((kind, committed))
    }

    fn new_orders(&self) -> Option<u64> {
        Some(self.new_orders)
    }

    /// Consistency conditions 1–4 (clause 3.3.2).
    fn check(&mut self, s: &mut Session<'_>) -> Result<(), String> {
        let bad = s.rows(
            "SELECT w_id, w_ytd, (SELECT SUM(d_ytd) FROM district WHERE d_w_id = w_id) AS d_ytd FROM warehouse \
             WHERE w_ytd IS NOT d_ytd",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Option<i64>>(2)?)),
        )?;
        if let Some((w, w_ytd, d_ytd)) = bad.first() {
            return Err(format!("condition 1: warehouse {w} w_ytd {w_ytd} != sum(d_ytd) {d_ytd:?}"));
        }
        let districts = s.rows(
            "SELECT d_w_id, d_id, d_next_o_id, \
               (SELECT MAX(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), \
               (SELECT MAX(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id), \
               (SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id), \
               (SELECT COUNT(*) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id), \
               (SELECT SUM(o_ol_cnt) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), \
               (SELECT COUNT(*) FROM order_line WHERE ol_w_id = d_w_id AND ol_d_id = d_id) \
             FROM district ORDER BY d_w_id, d_id",
            [],
            |r| (0..9).map(|i| r.get::<_, Option<i64>>(i)).collect::<rusqlite::Result<Vec<_>>>(),
        )?;
        for row in districts {
            let [w, d, next, max_o, max_no, min_no, count_no, ol_cnt, ol_rows] = row[..] else {
                return Err("district check: a row without nine columns".into());
            };
            let (w, d) = (w.unwrap_or(0), d.unwrap_or(0));
            let next = next.unwrap_or(0);
            if Some(next - 1) != max_o || max_no.is_some_and(|m| Some(m) != max_o) {
                return Err(format!(
                    "condition 2: district ({w}, {d}) d_next_o_id - 1 = {}, max(o_id) = {max_o:?}, max(no_o_id) = {max_no:?}",
                    next - 1
                ));
            }
            if let (Some(lo), Some(hi)) = (min_no, max_no) {
                if Some(hi - lo + 1) != count_no {
                    return Err(format!(
                        "condition 3: district ({w}, {d}) new orders {lo}..={hi} but {count_no:?} rows"
                    ));
                }
            }
            if ol_cnt != ol_rows {
                return Err(format!(
                    "condition 4: district ({w}, {d}) sum(o_ol_cnt) {ol_cnt:?} != order lines {ol_rows:?}"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Consistency;
    use crate::sqlite::{runner::run, ConfiguredSqlite, HostSqlite, SqliteRunConfig};
    use crate::Control;

    #[test]
    fn one_warehouse_runs_the_mix_and_keeps_conditions_1_to_4() {
        let p = TpccSqlParams { warehouses: 1, transactions: 2000, ..Default::default() };
        let mut host = HostSqlite::in_memory().unwrap();
        let mut w = TpccSql::new(p.clone());
        let config = SqliteRunConfig { check: true, ..Default::default() };
        let r = run(&mut host, &mut w, p.params(), &config, &mut |_, _| Control::Continue).unwrap();
        assert_eq!(r.consistency_check, Some(Consistency::Passed));
        assert_eq!(r.transactions, 2000);
        for (kind, share) in KINDS.iter().zip(Mix::STANDARD.0) {
            let got = r.kinds[*kind].transactions as f64 / 2000.0;
            assert!((got - share as f64 / 100.0).abs() < 0.03, "{kind}: {got}");
        }
        // About 1% of NewOrders roll back on the unused item.
        let no = &r.kinds["new_order"];
        assert!(no.committed < no.transactions && no.transactions - no.committed < no.transactions / 20, "{no:?}");
        let tpmc = r.tpmc.unwrap();
        assert!((tpmc - no.committed as f64 * 60.0 / r.sim_seconds).abs() < 1e-6);
        let mut s = Session::new(&mut host, 0);
        let orders = s.int("SELECT COUNT(*) FROM orders", []).unwrap();
        assert_eq!(orders as u64, 10 * 3000 + no.committed);
        // Break condition 2 and then 1: the check names them.
        s.batch("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_id = 3").unwrap();
        assert!(w.check(&mut s).unwrap_err().starts_with("condition 2: district (1, 3)"));
        s.batch("UPDATE district SET d_next_o_id = d_next_o_id - 1 WHERE d_id = 3; UPDATE warehouse SET w_ytd = 0")
            .unwrap();
        assert!(w.check(&mut s).unwrap_err().starts_with("condition 1: warehouse 1"));
    }
}
