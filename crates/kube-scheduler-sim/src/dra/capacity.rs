//! Consumable capacity (DR.12, DRAConsumableCapacity, on by default from
//! 1.36): what a request consumes of a device's capacities, and whether
//! the device still has room (`k8s.io/dynamic-resource-allocation`'s
//! `consumable_capacity.go`, the incubating allocator kube-scheduler uses
//! with the default gates).
//!
//! Amounts are nano-units (`i128`), as the crate's quantity parser gives
//! them; the range arithmetic runs on whole units rounded up, as upstream's
//! `Quantity.Value()` does when fractional ranges are off (their default).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{CapacityRequestPolicy, DeviceCapacity};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kube_validation::Quantity;

/// Nano-units per unit.
const UNIT: i128 = 1_000_000_000;

/// A capacity amount per capacity name, in nano-units.
pub(crate) type Amounts = BTreeMap<String, i128>;

/// A quantity's nano-units; 0 when it does not parse (the API server
/// validates them).
pub(crate) fn nanos(q: &ApiQuantity) -> i128 {
    Quantity::parse(&q.0).map_or(0, Quantity::nanos)
}

/// `Quantity.Value()`: whole units, rounded up.
fn units(nanos: i128) -> i128 {
    nanos.div_euclid(UNIT) + i128::from(nanos.rem_euclid(UNIT) != 0)
}

/// What one request consumes of one capacity (`calculateConsumedCapacity`),
/// and whether it is the policy's default for a capacity the request does
/// not name (which never violates the policy).
fn consumed(requested: Option<i128>, capacity: &DeviceCapacity) -> (i128, bool) {
    let policy = capacity.request_policy.as_ref();
    let Some(requested) = requested else {
        // `fillEmptyRequest`: the default, else the whole capacity.
        return match policy.and_then(|p| p.default.as_ref()) {
            Some(default) => (nanos(default), true),
            None => (nanos(&capacity.value), false),
        };
    };
    let Some(policy) = policy else {
        return (requested, false);
    };
    if let Some(range) = &policy.valid_range {
        let min = nanos(&range.min);
        if requested < min {
            return (min, false);
        }
        let Some(step) = range.step.as_ref().map(nanos) else {
            return (requested, false);
        };
        let (requested, min, step) = (units(requested), units(min), units(step));
        if step <= 0 {
            return (requested * UNIT, false);
        }
        let added = requested - min;
        let steps = added / step + i128::from(added % step != 0);
        return ((min + steps * step) * UNIT, false);
    }
    if let Some(values) = &policy.valid_values {
        // The first valid value at least the request; none: the request.
        let rounded = values.iter().map(nanos).find(|v| requested <= *v);
        return (rounded.unwrap_or(requested), false);
    }
    (requested, false)
}

/// `violatesPolicy`: above the range's maximum, off its steps, or not a
/// valid value.
fn violates(amount: i128, policy: Option<&CapacityRequestPolicy>, is_default: bool) -> bool {
    let Some(policy) = policy else {
        return false;
    };
    if is_default {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        let min = nanos(&range.min);
        let above = range.max.as_ref().is_some_and(|max| amount > nanos(max));
        let off_step = range.step.as_ref().is_some_and(|step| {
            let step = units(nanos(step));
            step > 0 && (units(amount) - units(min)) % step != 0
        });
        return above || off_step;
    }
    if let Some(values) = policy.valid_values.as_ref().filter(|v| !v.is_empty()) {
        return !values.iter().any(|v| nanos(v) == amount);
    }
    false
}

/// `CmpRequestOverCapacity`: what the request consumes of each of the
/// device's capacities when the device has room for it beside `in_use`
/// (shares of allocated claims) and `allocating` (shares picked in this
/// allocation), or `None` when it does not: a capacity it names that the
/// device lacks, a policy it violates, or too little left.
pub(crate) fn fits(
    requests: Option<&BTreeMap<String, ApiQuantity>>,
    capacities: Option<&BTreeMap<String, DeviceCapacity>>,
    in_use: Option<&Amounts>,
    allocating: Option<&Amounts>,
) -> Option<Amounts> {
    let empty = BTreeMap::new();
    let capacities = capacities.unwrap_or(&empty);
    if requests
        .into_iter()
        .flatten()
        .any(|(name, _)| !capacities.contains_key(name))
    {
        return None;
    }
    let mut taken = Amounts::new();
    for (name, capacity) in capacities {
        let requested = requests.and_then(|r| r.get(name)).map(nanos);
        let (amount, is_default) = consumed(requested, capacity);
        if violates(amount, capacity.request_policy.as_ref(), is_default) {
            return None;
        }
        let before = |held: Option<&Amounts>| held.and_then(|h| h.get(name)).copied().unwrap_or(0);
        if before(in_use) + amount + before(allocating) > nanos(&capacity.value) {
            return None;
        }
        taken.insert(name.clone(), amount);
    }
    Some(taken)
}

/// Add (`sign` 1) or take away (`sign` -1) `amounts`.
pub(crate) fn add(into: &mut Amounts, amounts: &Amounts, sign: i128) {
    for (name, amount) in amounts {
        *into.entry(name.clone()).or_default() += sign * amount;
    }
}

/// An amount as a quantity: whole units, else milli-units, else nano-units.
pub(crate) fn quantity(nanos: i128) -> ApiQuantity {
    ApiQuantity(if nanos % UNIT == 0 {
        (nanos / UNIT).to_string()
    } else if nanos % 1_000_000 == 0 {
        format!("{}m", nanos / 1_000_000)
    } else {
        format!("{nanos}n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capacity(value: serde_json::Value) -> DeviceCapacity {
        serde_json::from_value(value).unwrap()
    }

    fn q(s: &str) -> i128 {
        nanos(&ApiQuantity(s.to_owned()))
    }

    fn requests(list: &[(&str, &str)]) -> BTreeMap<String, ApiQuantity> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), ApiQuantity((*v).to_owned())))
            .collect()
    }

    /// `withCapacityRequestPolicyRange(value)` of allocator_testing.go:
    /// default 2, range from 2 in steps of 2 up to 4.
    fn range(value: &str) -> DeviceCapacity {
        capacity(json!({"value": value, "requestPolicy": {"default": "2",
            "validRange": {"min": "2", "step": "2", "max": "4"}}}))
    }

    fn fit(request: Option<&str>, capacity: DeviceCapacity, in_use: i128) -> Option<i128> {
        let caps = BTreeMap::from([("capacity-0".to_owned(), capacity)]);
        let reqs = request.map(|r| requests(&[("capacity-0", r)]));
        let used = Amounts::from([("capacity-0".to_owned(), in_use)]);
        fits(reqs.as_ref(), Some(&caps), Some(&used), None).map(|t| t["capacity-0"])
    }

    // The consumable-capacity rows of allocator_testing.go
    // (dynamic-resource-allocation v0.37.2), one device at a time.
    #[test]
    fn consumed_amounts_follow_the_request_policy() {
        // "...-without-policy-without-capacity-request": the whole value.
        assert_eq!(fit(None, capacity(json!({"value": "1"})), 0), Some(q("1")));
        // "...-with-policy-without-capacity-request": the default.
        assert_eq!(fit(None, range("4"), 0), Some(q("2")));
        // "...-with-range-policy-with-capacity-request": up to the minimum.
        assert_eq!(fit(Some("1"), range("4"), 0), Some(q("2")));
        // "...-with-range-policy-step": up to the next step.
        assert_eq!(fit(Some("3"), range("4"), 0), Some(q("4")));
        // "...-with-request-over-max-sharing-policy".
        let wide = capacity(json!({"value": "10", "requestPolicy": {"default": "2",
            "validRange": {"min": "2", "step": "2", "max": "4"}}}));
        assert_eq!(fit(Some("6"), wide, 0), None);
        // "...-with-valid-values-policy(-round-up)".
        let values = capacity(json!({"value": "4", "requestPolicy": {"default": "1",
            "validValues": ["1", "2"]}}));
        assert_eq!(fit(Some("2"), values, 0), Some(q("2")));
        let values = capacity(json!({"value": "3", "requestPolicy": {"default": "1",
            "validValues": ["1", "3"]}}));
        assert_eq!(fit(Some("2"), values, 0), Some(q("3")));
        // "...-with-zero-request-policy" / "...-violates-zero-request-policy".
        let zero = capacity(json!({"value": "1", "requestPolicy": {"default": "0",
            "validValues": ["0"]}}));
        assert_eq!(fit(None, zero.clone(), 0), Some(0));
        assert_eq!(fit(Some("1"), zero, 0), None);
    }

    // "...-with-allocated-capacity-use-remaining" and "-no-available".
    #[test]
    fn shares_of_allocated_claims_leave_the_rest() {
        assert_eq!(fit(Some("2"), range("4"), q("2")), Some(q("2")));
        assert_eq!(fit(Some("2"), range("2"), q("2")), None);
    }

    // "...-missing-capacity-request": a capacity the device lacks.
    #[test]
    fn a_request_for_a_capacity_the_device_lacks_does_not_fit() {
        let caps = BTreeMap::from([("capacity-1".to_owned(), capacity(json!({"value": "1"})))]);
        let reqs = requests(&[("capacity-0", "1")]);
        assert_eq!(fits(Some(&reqs), Some(&caps), None, None), None);
        assert_eq!(fits(Some(&reqs), None, None, None), None);
    }

    #[test]
    fn amounts_are_written_as_whole_milli_or_nano_units() {
        assert_eq!(quantity(q("2")).0, "2");
        assert_eq!(quantity(q("250m")).0, "250m");
        assert_eq!(quantity(5).0, "5n");
    }
}
