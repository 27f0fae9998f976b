//! The recount transition table (L3.12) against an independent transcription
//! of Velero's rule plus the documented fixes.

use load_soothe::Phase;
use load_soothe::{Observed, Recount, RecountPolicy, recount};
use proptest::prelude::*;

/// Velero `vgdp_counter.go`, transcribed from L3.12: only informer
/// Update events, only if the phase string changed, and then only if the new
/// phase is Accepted, or the old phase is Prepared, or the old phase is
/// Accepted and the new phase is not Prepared. Create and Delete never.
fn velero_oracle(old: Option<(Phase, bool)>, new: Option<(Phase, bool)>) -> bool {
    let (Some((o, _)), Some((n, _))) = (old, new) else {
        return false;
    };
    if o == n {
        return false;
    }
    let (o, n) = (format!("{o:?}"), format!("{n:?}"));
    n == "Accepted" || o == "Prepared" || (o == "Accepted" && n != "Prepared")
}

/// The fix (docs/compatibility.md): any event after which the load's "in
/// preparation" status (label `velero.io/expose-on-going=true`, or phase
/// Accepted/Prepared) differs from before; a missing object is not in
/// preparation.
fn fix_oracle(old: Option<(Phase, bool)>, new: Option<(Phase, bool)>) -> bool {
    let in_prep = |s: Option<(Phase, bool)>| match s {
        None => false,
        Some((p, label)) => label || matches!(p, Phase::Accepted | Phase::Prepared),
    };
    in_prep(old) != in_prep(new)
}

fn to_observed(s: Option<(Phase, bool)>) -> Option<Observed> {
    s.map(|(phase, expose_on_going)| Observed {
        phase,
        expose_on_going,
    })
}

fn all_states() -> Vec<Option<(Phase, bool)>> {
    let mut v = vec![None];
    for p in Phase::ALL {
        v.push(Some((p, false)));
        v.push(Some((p, true)));
    }
    v
}

fn check(old: Option<(Phase, bool)>, new: Option<(Phase, bool)>) {
    let velero = recount(RecountPolicy::Velero, to_observed(old), to_observed(new));
    let fixed = recount(RecountPolicy::Fixed, to_observed(old), to_observed(new));
    assert_eq!(
        velero.refreshes(),
        velero_oracle(old, new),
        "Velero table, {old:?} -> {new:?}"
    );
    assert_eq!(
        fixed.refreshes(),
        velero_oracle(old, new) || fix_oracle(old, new),
        "fixed table, {old:?} -> {new:?}"
    );
    // A refresh is labelled Velero exactly when Velero refreshes too.
    assert_eq!(
        matches!(fixed, Recount::Velero(_)),
        velero_oracle(old, new),
        "{old:?} -> {new:?}: {fixed:?}"
    );
}

#[test]
fn recount_table_equals_velero_plus_documented_fixes_exhaustively() {
    let states = all_states();
    assert_eq!(states.len(), 19);
    for old in &states {
        for new in &states {
            check(*old, *new);
        }
    }
}

fn state() -> impl Strategy<Value = Option<(Phase, bool)>> {
    prop::option::of((prop::sample::select(Phase::ALL.to_vec()), any::<bool>()))
}

proptest! {
    #[test]
    fn recount_table_equals_velero_plus_documented_fixes(old in state(), new in state()) {
        check(old, new);
    }
}

/// A readable grid of the table for label-consistent states (label set
/// exactly in Accepted/Prepared, as Velero writes it), plus create and
/// delete: `V` = Velero trigger, `F` = fix only, `.` = no recount.
#[test]
fn recount_table_grid_snapshot() {
    let label_of = |p: Phase| matches!(p, Phase::Accepted | Phase::Prepared);
    let short = |p: Phase| match p {
        Phase::New => "New",
        Phase::Accepted => "Acc",
        Phase::Prepared => "Prep",
        Phase::InProgress => "InPr",
        Phase::Canceling => "Cing",
        Phase::Canceled => "Cncl",
        Phase::Completed => "Comp",
        Phase::Failed => "Fail",
        Phase::Unrecognized => "Unrc",
    };
    type Row<'a> = (String, &'a str, Option<(Phase, bool)>);
    let mut rows: Vec<Row> = vec![("(absent)".to_owned(), "abs", None)];
    for p in Phase::ALL {
        rows.push((format!("{p:?}"), short(p), Some((p, label_of(p)))));
    }
    let mut out = String::from("old \\ new      ");
    for (_, name, _) in &rows {
        out.push_str(&format!(" {name:>4}"));
    }
    out.push('\n');
    for (oname, _, old) in &rows {
        out.push_str(&format!("{oname:<14}"));
        for (_, _, new) in &rows {
            let cell = if old.is_none() && new.is_none() {
                "-"
            } else {
                match recount(RecountPolicy::Fixed, to_observed(*old), to_observed(*new)) {
                    Recount::No => ".",
                    Recount::Velero(_) => "V",
                    Recount::Fix(_) => "F",
                }
            };
            out.push_str(&format!(" {cell:>4}"));
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}
