//! The FTL's knobs as flags, defined once and flattened into every command that runs a
//! conventional FTL: `ftl-bench` and `replay` take [`FtlKnobArgs`] (their spare factor
//! and GC policy are the region flags, which apply to an FTL too), `bench`, `compare`,
//! `bench --engine sqlite`, `index-bench` and `torture` take [`FtlArgs`], the knobs plus
//! the spare factor and GC policy. Each flag is optional and overrides the field of the config it applies to
//! ([`flash::ftl::FtlConfig`]); a flag given without an FTL to apply it to is refused
//! by the caller with [`FtlArgs::given`]'s names.

use clap::Args;
use flash::ftl::{FtlConfig, FtlKind};
use flash::VictimPolicy;

/// The knobs of one FTL kind each: DFTL's cached mapping table, BAST's and FAST's log
/// blocks, NoLgn-FTL's P2P table.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct FtlKnobArgs {
    /// DFTL: mapping entries its cached mapping table holds [default: 4096].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub cmt_entries: Option<u32>,
    /// BAST and FAST: log blocks (FAST: one sequential, the rest shared random)
    /// [default: 32].
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub log_blocks: Option<u32>,
    /// NoLgn-FTL: entries of the P2P table (pages of open transactions) in controller
    /// RAM [default: 10000, the NoLgn paper's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub p2p_entries: Option<u32>,
}

impl FtlKnobArgs {
    /// Sets the fields of `config` the flags give.
    pub fn apply(&self, config: &mut FtlConfig) {
        set(&mut config.cmt_entries, self.cmt_entries);
        set(&mut config.log_blocks, self.log_blocks);
        set(&mut config.p2p_entries, self.p2p_entries);
    }

    /// The flags given, as spelled on the command line.
    pub fn given(&self) -> Vec<&'static str> {
        let flags = [
            ("--cmt-entries", self.cmt_entries.is_some()),
            ("--log-blocks", self.log_blocks.is_some()),
            ("--p2p-entries", self.p2p_entries.is_some()),
        ];
        flags.into_iter().filter(|(_, given)| *given).map(|(flag, _)| flag).collect()
    }

    /// Refuses a knob of another kind than `kind` (it would be accepted and do nothing).
    pub fn check_kind(&self, kind: FtlKind) -> Result<(), String> {
        let owners = [
            ("--cmt-entries", self.cmt_entries.is_some(), &[FtlKind::Dftl][..]),
            ("--log-blocks", self.log_blocks.is_some(), &[FtlKind::Bast, FtlKind::Fast][..]),
            ("--p2p-entries", self.p2p_entries.is_some(), &[FtlKind::Nolgn][..]),
        ];
        match owners.iter().find(|(_, given, kinds)| *given && !kinds.contains(&kind)) {
            Some((flag, _, kinds)) => {
                let names: Vec<String> = kinds.iter().map(|k| format!("ftl:{}", k.name())).collect();
                Err(format!("{flag} is a knob of {}; this run's FTL is ftl:{}", names.join(" and "), kind.name()))
            }
            None => Ok(()),
        }
    }
}

/// Every FTL knob: [`FtlKnobArgs`], the spare factor and the GC victim policy.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct FtlArgs {
    #[command(flatten)]
    pub knobs: FtlKnobArgs,
    /// FTL: spare factor (physical − logical) / physical, in [0, 1) [default: 0.1].
    #[arg(long, value_parser = crate::setup::spare_share)]
    pub over_provisioning: Option<f64>,
    /// FTL (page, DFTL, NoLgn): GC victim policy, greedy or cost-benefit [default: greedy].
    #[arg(long)]
    pub gc: Option<VictimPolicy>,
}

impl FtlArgs {
    /// Sets the fields of `config` the flags give, after refusing a knob of another kind.
    pub fn apply(&self, config: &mut FtlConfig) -> Result<(), String> {
        self.knobs.check_kind(config.kind)?;
        self.knobs.apply(config);
        set(&mut config.over_provisioning, self.over_provisioning);
        set(&mut config.gc.policy, self.gc);
        Ok(())
    }

    /// The flags given, as spelled on the command line.
    pub fn given(&self) -> Vec<&'static str> {
        let mut flags = self.knobs.given();
        if self.over_provisioning.is_some() {
            flags.push("--over-provisioning");
        }
        if self.gc.is_some() {
            flags.push("--gc");
        }
        flags
    }

    /// Refuses any of these flags on a run without an FTL (`what` says what it runs on).
    pub fn refuse_without_ftl(&self, what: &str) -> Result<(), String> {
        self.refuse_without(what, "add --storage ftl:KIND")
    }

    /// As [`FtlArgs::refuse_without_ftl`], `remedy` saying how to run on an FTL.
    pub fn refuse_without(&self, what: &str, remedy: &str) -> Result<(), String> {
        match self.given().first() {
            Some(flag) => Err(format!("{flag} is an FTL setting; {what} runs on no FTL: {remedy}")),
            None => Ok(()),
        }
    }
}

fn set<T>(field: &mut T, flag: Option<T>) {
    if let Some(v) = flag {
        *field = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_knob_of_another_kind_is_refused_by_name() {
        let args = FtlArgs { knobs: FtlKnobArgs { p2p_entries: Some(50), ..Default::default() }, ..Default::default() };
        let mut config = FtlConfig::new(FtlKind::Nolgn);
        args.apply(&mut config).unwrap();
        assert_eq!(config.p2p_entries, 50);
        let e = args.apply(&mut FtlConfig::new(FtlKind::Page)).unwrap_err();
        assert_eq!(e, "--p2p-entries is a knob of ftl:nolgn; this run's FTL is ftl:page");
        let spare = FtlArgs { over_provisioning: Some(0.2), gc: Some(VictimPolicy::CostBenefit), ..args };
        let mut config = FtlConfig::new(FtlKind::Nolgn);
        spare.apply(&mut config).unwrap();
        assert_eq!((config.over_provisioning, config.gc.policy), (0.2, VictimPolicy::CostBenefit));
        let e = spare.refuse_without_ftl("noftl").unwrap_err();
        assert!(e.starts_with("--p2p-entries is an FTL setting"), "{e}");
    }
}
