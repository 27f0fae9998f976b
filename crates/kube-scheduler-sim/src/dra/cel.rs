//! CEL device selectors (`DeviceSelector.cel.expression`), evaluated the way
//! kube-scheduler 1.34–1.37 does (`k8s.io/dynamic-resource-allocation/cel`:
//! `CompileCELExpression` and `DeviceMatches`).
//!
//! An expression sees one variable, `device`, a map with:
//! - `driver`: the driver's name;
//! - `allowMultipleAllocations`: whether the device may be shared;
//! - `attributes` and `capacity`: maps from a *domain* to maps from an *id*
//!   to a value. `gpu.example.com/model` is id `model` in domain
//!   `gpu.example.com`; a name without a domain is in the driver's. Looking
//!   up a domain the device has nothing in yields an empty map, so
//!   `device.attributes["other.com"].x` fails with `no such key: x` and
//!   `"x" in device.attributes["other.com"]` is false, while
//!   `"other.com" in device.attributes` is false too.
//!
//! Maps iterate in key order, so `map()` and `filter()` give the same lists
//! on every run (upstream's order is Go's, random).
//!
//! Attribute values are CEL `int`, `bool` and `string`, and `version`s are
//! `kubernetes.Semver` values; capacities are `kubernetes.Quantity` values.
//! Besides the standard library (with `matches`), the strings and lists
//! extensions and the `cel.bind` macro, the Kubernetes `quantity` and
//! `semver` libraries are declared (`k8s.io/apiserver/pkg/cel/library`):
//! `quantity`, `isQuantity`, `sign`, and on quantities `compareTo`,
//! `isGreaterThan`, `isLessThan`, `asInteger`, `isInteger`,
//! `asApproximateFloat`, `add`, `sub`; `semver`, `isSemver` (both with an
//! optional `normalize` flag), and on versions `compareTo`,
//! `isGreaterThan`, `isLessThan`, `major`, `minor`, `patch`. Two quantities,
//! or two versions, compare equal with `==` when their values do.
//!
//! Where this differs from kube-scheduler:
//! - There is no type checker. A compile error is a parse error, an
//!   identifier other than `device` (and the names of types and
//!   comprehension variables), or a literal of another type than `bool` as
//!   the whole expression (`must evaluate to bool ...`). Other type errors
//!   upstream reports when compiling (an unknown function, a field the
//!   device has not, a result that is never a `bool`) are runtime errors
//!   here, reported when a device is evaluated.
//! - No cost limit: an expression upstream stops with `actual cost limit
//!   exceeded` runs to its end.
//! - Quantities are exact up to about 1.7·10²⁹ (`kube_validation::Quantity`):
//!   larger ones are not quantities here (`isQuantity` is false, `quantity`
//!   fails), and sums beyond that fail. `asApproximateFloat` divides the
//!   exact value, which may differ in the last bit from upstream's
//!   `mantissa * 10^scale`.
//! - `sign` is a global function (`sign(q)`), as upstream declares it;
//!   `q.sign()`, which its documentation shows, is an error there and here.
//! - `device` and its maps are not equal to anything with `==`, themselves
//!   included (nobody compares whole maps in a selector).
//! - The list-valued attributes of 1.36+ (`bools`, `ints`, `strings`,
//!   `versions`) are not in the `resource.k8s.io/v1` types this crate is
//!   built with, and the `lists` library functions of Kubernetes
//!   (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on lists),
//!   `sets`, `url`, `ip`, `cidr`, `format` and the two-variable
//!   comprehensions are not declared.

use std::any::Any;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

use cel::common::ast::{
    ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, SourceInfo,
};
use cel::common::traits::{Container, Indexer, Iterable, Sizer};
use cel::common::types::{self, CelBool, CelDouble, CelInt, CelString, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{Context, DeclarationError, Env, ExecutionError, Program, Value};
use k8s_openapi::api::resource::v1::{DeviceAttribute, DeviceCapacity};
use kube_validation::Quantity;

/// What a selector sees of one device.
pub(crate) struct DeviceInput<'a> {
    /// The driver's name: `device.driver`, and the domain of the attribute
    /// and capacity names without one.
    pub(crate) driver: &'a str,
    /// The device's attributes, by qualified name.
    pub(crate) attributes: Option<&'a BTreeMap<String, DeviceAttribute>>,
    /// The device's capacities, by qualified name.
    pub(crate) capacity: Option<&'a BTreeMap<String, DeviceCapacity>>,
    /// `device.allowMultipleAllocations` (unset is false).
    pub(crate) allow_multiple_allocations: bool,
}

/// A compiled selector expression (cheap to clone or share; it will be
/// cached per expression text by the caller).
#[derive(Clone, Debug)]
pub(crate) struct CompiledSelector {
    /// The parsed expression, macros expanded.
    program: Arc<Program>,
}

impl CompiledSelector {
    /// Err carries the compile error text (parse errors), used in
    /// "claim ns/name: selector #i: CEL compile error: {text}".
    pub(crate) fn compile(expression: &str) -> Result<Self, String> {
        let env = environment()?;
        let program = env
            .compile(expression)
            .map_err(|errors| format!("compilation failed: {errors}"))?;
        check_identifiers(program.expression(), program.source_info(), &mut Vec::new())?;
        check_result_type(program.expression())?;
        Ok(Self {
            program: Arc::new(program),
        })
    }

    /// Ok(bool) when the expression evaluates to a bool; Err(text) for a
    /// runtime error (e.g. "no such key: foo") or a non-bool result, used in
    /// "... CEL runtime error: {text}".
    pub(crate) fn matches(&self, device: &DeviceInput<'_>) -> Result<bool, String> {
        let env = environment()?;
        let device_value = device_value(device)?;
        let mut context = Context::with_env(env);
        context.add_variable_as_val(DEVICE, Box::new(device_value));
        let result = Value::resolve_val(self.program.expression(), &context)
            .map_err(|error| runtime_error_text(&error))?;
        match result.downcast_ref::<CelBool>() {
            Some(matched) => Ok(*matched.inner()),
            None => {
                let type_name = result.get_type().name();
                Err(format!(
                    "CEL result of type {type_name} could not be converted to bool: \
                     type conversion error from {type_name} to 'bool'"
                ))
            }
        }
    }
}

/// The variable a selector reads.
const DEVICE: &str = "device";

/// The environment every selector is compiled and evaluated in, built once.
static ENVIRONMENT: LazyLock<Result<Arc<Env>, String>> = LazyLock::new(|| {
    build_environment()
        .map(Arc::new)
        .map_err(|error| format!("unexpected error loading CEL environment: {error}"))
});

/// The shared environment, or why it could not be built.
fn environment() -> Result<Arc<Env>, String> {
    ENVIRONMENT.as_ref().map(Arc::clone).map_err(Clone::clone)
}

/// The standard library, the strings and lists extensions, `cel.bind`,
/// and the Kubernetes `quantity` and `semver` libraries.
fn build_environment() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    env.add_extension(cel::extensions::lists)?;
    env.add_macro(Macro::receiver("bind", 3, bind_macro))?;
    env.add_type(QUANTITY_TYPE.to_owned())?;
    env.add_type(SEMVER_TYPE.to_owned())?;

    let quantity = || QUANTITY_TYPE.to_owned();
    let semver = || SEMVER_TYPE.to_owned();
    let string = || types::STRING_TYPE;

    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![string()],
        string_to_quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![string()],
        is_quantity,
    )?;
    env.add_overload("sign", "quantity_sign", vec![quantity()], quantity_sign)?;
    let quantity_members: [(&str, &str, Vec<Type>, cel::common::functions::Function); 10] = [
        (
            "isGreaterThan",
            "quantity_is_greater_than",
            vec![quantity()],
            quantity_is_greater_than,
        ),
        (
            "isLessThan",
            "quantity_is_less_than",
            vec![quantity()],
            quantity_is_less_than,
        ),
        (
            "compareTo",
            "quantity_compare_to",
            vec![quantity()],
            quantity_compare_to,
        ),
        (
            "asApproximateFloat",
            "quantity_get_float",
            vec![],
            quantity_as_float,
        ),
        ("asInteger", "quantity_get_int", vec![], quantity_as_integer),
        (
            "isInteger",
            "quantity_is_integer",
            vec![],
            quantity_is_integer,
        ),
        ("add", "quantity_add", vec![quantity()], quantity_add),
        (
            "add",
            "quantity_add_int",
            vec![types::INT_TYPE],
            quantity_add_int,
        ),
        ("sub", "quantity_sub", vec![quantity()], quantity_sub),
        (
            "sub",
            "quantity_sub_int",
            vec![types::INT_TYPE],
            quantity_sub_int,
        ),
    ];
    for (name, id, args, op) in quantity_members {
        env.add_member_overload(name, id, quantity(), args, op)?;
    }

    env.add_overload(
        "semver",
        "string_to_semver",
        vec![string()],
        string_to_semver,
    )?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![string(), types::BOOL_TYPE],
        string_bool_to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![string()], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![string(), types::BOOL_TYPE],
        is_semver_bool,
    )?;
    let semver_members: [(&str, &str, Vec<Type>, cel::common::functions::Function); 6] = [
        (
            "isGreaterThan",
            "semver_is_greater_than",
            vec![semver()],
            semver_is_greater_than,
        ),
        (
            "isLessThan",
            "semver_is_less_than",
            vec![semver()],
            semver_is_less_than,
        ),
        (
            "compareTo",
            "semver_compare_to",
            vec![semver()],
            semver_compare_to,
        ),
        ("major", "semver_major", vec![], semver_major),
        ("minor", "semver_minor", vec![], semver_minor),
        ("patch", "semver_patch", vec![], semver_patch),
    ];
    for (name, id, args, op) in semver_members {
        env.add_member_overload(name, id, semver(), args, op)?;
    }
    Ok(env)
}

/// `cel.bind(name, init, result)` (cel-go's `ext.Bindings`): `result` with
/// `name` bound to `init`, expanded into a comprehension over nothing whose
/// accumulator is `name`.
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(name)) if name == "cel") {
        return Ok(None);
    }
    let variable = match args.first().map(|arg| (&arg.expr, arg.id)) {
        Some((Expr::Ident(name), _)) => name.clone(),
        Some((_, id)) => {
            return Err(
                helper.new_error(id, "cel.bind() variable names must be simple identifiers")
            );
        }
        None => return Ok(None),
    };
    let (Some(result), Some(init)) = (args.pop(), args.pop()) else {
        return Err(helper.new_error(0, "cel.bind() takes a name, a value and an expression"));
    };
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: variable.clone(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(variable)),
        result,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

/// Names an expression may use without declaring them: the variable and the
/// types.
const GLOBAL_NAMES: &[&str] = &[
    DEVICE,
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "optional_type",
    "string",
    "type",
    "uint",
    "kubernetes.Quantity",
    "kubernetes.Semver",
];

/// Namespaces of functions (`optional.of(x)`, `lists.range(n)`,
/// `strings.quote(s)`): the target of such a call is not a variable.
const FUNCTION_NAMESPACES: &[&str] = &["optional", "lists", "strings"];

/// Rejects an identifier that is neither declared nor bound by an enclosing
/// comprehension (cel-go's checker: `undeclared reference to 'x'`).
fn check_identifiers(
    expr: &IdedExpr,
    source: &SourceInfo,
    scope: &mut Vec<String>,
) -> Result<(), String> {
    match &expr.expr {
        Expr::Ident(name) => {
            if scope.iter().any(|bound| bound == name) || GLOBAL_NAMES.contains(&name.as_str()) {
                Ok(())
            } else {
                Err(undeclared_reference(name, expr.id, source))
            }
        }
        Expr::Select(select) => check_identifiers(&select.operand, source, scope),
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                let namespace = match &target.expr {
                    Expr::Ident(name) => {
                        !scope.iter().any(|bound| bound == name)
                            && FUNCTION_NAMESPACES.contains(&name.as_str())
                    }
                    _ => false,
                };
                if !namespace {
                    check_identifiers(target, source, scope)?;
                }
            }
            call.args
                .iter()
                .try_for_each(|arg| check_identifiers(arg, source, scope))
        }
        Expr::Comprehension(comprehension) => {
            check_identifiers(&comprehension.iter_range, source, scope)?;
            check_identifiers(&comprehension.accu_init, source, scope)?;
            let outer = scope.len();
            scope.push(comprehension.accu_var.clone());
            let with_accumulator = scope.len();
            scope.push(comprehension.iter_var.clone());
            scope.extend(comprehension.iter_var2.clone());
            let in_loop = check_identifiers(&comprehension.loop_cond, source, scope)
                .and_then(|()| check_identifiers(&comprehension.loop_step, source, scope));
            scope.truncate(with_accumulator);
            let result =
                in_loop.and_then(|()| check_identifiers(&comprehension.result, source, scope));
            scope.truncate(outer);
            result
        }
        Expr::List(list) => list
            .elements
            .iter()
            .try_for_each(|element| check_identifiers(element, source, scope)),
        Expr::Map(map) => map.entries.iter().try_for_each(|entry| match &entry.expr {
            EntryExpr::MapEntry(entry) => check_identifiers(&entry.key, source, scope)
                .and_then(|()| check_identifiers(&entry.value, source, scope)),
            EntryExpr::StructField(field) => check_identifiers(&field.value, source, scope),
        }),
        Expr::Struct(object) => object
            .entries
            .iter()
            .try_for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(entry) => check_identifiers(&entry.key, source, scope)
                    .and_then(|()| check_identifiers(&entry.value, source, scope)),
                EntryExpr::StructField(field) => check_identifiers(&field.value, source, scope),
            }),
        Expr::Literal(_) | Expr::Unspecified => Ok(()),
    }
}

/// cel-go's error for an undeclared name, with the line it is on.
fn undeclared_reference(name: &str, id: u64, source: &SourceInfo) -> String {
    let offset = source
        .offset_for(id)
        .and_then(|(start, _)| usize::try_from(start).ok())
        .unwrap_or(0);
    let text = &source.source;
    let before = text.get(..offset).unwrap_or(text);
    let line_number = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    let line = text.lines().nth(line_number - 1).unwrap_or_default();
    format!(
        "compilation failed: ERROR: <input>:{line_number}:{column}: undeclared reference to \
         '{name}' (in container '')\n | {line}\n | {}^",
        ".".repeat(column - 1)
    )
}

/// Rejects an expression that is a literal of another type than `bool`
/// (upstream's output type check, for the types known without a checker).
fn check_result_type(expr: &IdedExpr) -> Result<(), String> {
    let type_name = match &expr.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => return Ok(()),
        Expr::Literal(LiteralValue::Bytes(_)) => "bytes",
        Expr::Literal(LiteralValue::Double(_)) => "double",
        Expr::Literal(LiteralValue::Int(_)) => "int",
        Expr::Literal(LiteralValue::Null) => "null_type",
        Expr::Literal(LiteralValue::String(_)) => "string",
        Expr::Literal(LiteralValue::UInt(_)) => "uint",
        _ => return Ok(()),
    };
    Err(format!(
        "must evaluate to bool or the unknown type, not {type_name}"
    ))
}

/// A runtime error as cel-go words it, where the two differ.
fn runtime_error_text(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::NoSuchOverload(overload) => format!(
            "no such overload: {}({})",
            overload.function(),
            overload.argument_types().join(", ")
        ),
        ExecutionError::UndeclaredReference(name) => format!("undeclared reference to '{name}'"),
        other => other.to_string(),
    }
}

/// Entries by key, before they become a [`SortedMap`].
type Entries<'a> = BTreeMap<&'a str, Box<dyn Val + 'a>>;

/// The `device` variable for one device.
fn device_value<'a>(device: &DeviceInput<'a>) -> Result<SortedMap<'a>, String> {
    let mut attributes: BTreeMap<&'a str, Entries<'a>> = BTreeMap::new();
    for (name, attribute) in device.attributes.into_iter().flatten() {
        let value =
            attribute_value(attribute).map_err(|error| format!("attribute {name}: {error}"))?;
        let (domain, id) = split_qualified_name(name, device.driver);
        attributes.entry(domain).or_default().insert(id, value);
    }
    let mut capacity: BTreeMap<&'a str, Entries<'a>> = BTreeMap::new();
    for (name, entry) in device.capacity.into_iter().flatten() {
        let value =
            Quantity::parse(&entry.value.0).map_err(|error| format!("capacity {name}: {error}"))?;
        let (domain, id) = split_qualified_name(name, device.driver);
        capacity
            .entry(domain)
            .or_default()
            .insert(id, Box::new(QuantityVal(value)));
    }
    let mut fields: Entries<'a> = BTreeMap::new();
    fields.insert("driver", Box::new(CelString::from(device.driver)));
    fields.insert(
        "allowMultipleAllocations",
        Box::new(CelBool::from(device.allow_multiple_allocations)),
    );
    fields.insert("attributes", Box::new(SortedMap::by_domain(attributes)));
    fields.insert("capacity", Box::new(SortedMap::by_domain(capacity)));
    Ok(SortedMap::new(fields, None))
}

/// The value of one attribute, the first set of `int`, `bool`, `string`,
/// `version` (upstream's order).
fn attribute_value<'a>(attribute: &'a DeviceAttribute) -> Result<Box<dyn Val + 'a>, String> {
    if let Some(value) = attribute.int {
        Ok(Box::new(CelInt::from(value)))
    } else if let Some(value) = attribute.bool {
        Ok(Box::new(CelBool::from(value)))
    } else if let Some(value) = &attribute.string {
        Ok(Box::new(CelString::from(value.as_str())))
    } else if let Some(value) = &attribute.version {
        let version =
            Semver::parse(value).map_err(|error| format!("parse semantic version: {error}"))?;
        Ok(Box::new(SemverVal(version)))
    } else {
        Err("unsupported attribute value".to_owned())
    }
}

/// Domain and id of a qualified name; a name without a domain is in
/// `default_domain` (`parseQualifiedName`).
fn split_qualified_name<'a>(name: &'a str, default_domain: &'a str) -> (&'a str, &'a str) {
    name.split_once('/').unwrap_or((default_domain, name))
}

/// A map with string keys, iterated in key order (a `CelMap` iterates in
/// hash order, which would make `map()` and `filter()` results differ from
/// run to run). A key that is not there is an error, `no such key`, or the
/// map's default value: `device.attributes` and `device.capacity` look up a
/// domain the device has nothing in as an empty map (`in` still tells).
#[derive(Debug, Clone)]
struct SortedMap<'v> {
    /// The entries, sorted by key, keys unique.
    entries: Vec<(CelString<'v>, Box<dyn Val + 'v>)>,
    /// What a missing key looks up as, if not an error.
    missing: Option<Box<dyn Val + 'v>>,
}

impl<'v> SortedMap<'v> {
    /// The map of `entries`.
    fn new(entries: Entries<'v>, missing: Option<Box<dyn Val + 'v>>) -> Self {
        Self {
            entries: entries
                .into_iter()
                .map(|(key, value)| (CelString::from(key), value))
                .collect(),
            missing,
        }
    }

    /// `device.attributes` or `device.capacity`: maps of ids by domain,
    /// where a missing domain is an empty map.
    fn by_domain(domains: BTreeMap<&'v str, Entries<'v>>) -> Self {
        let domains = domains
            .into_iter()
            .map(|(domain, ids)| {
                let ids: Box<dyn Val + 'v> = Box::new(SortedMap::new(ids, None));
                (domain, ids)
            })
            .collect();
        Self::new(
            domains,
            Some(Box::new(SortedMap::new(Entries::new(), None))),
        )
    }

    /// The value at `key`, if it is a key of the map.
    fn find(&self, key: &str) -> Option<&(dyn Val + 'v)> {
        self.entries
            .binary_search_by(|(k, _)| k.inner().cmp(key))
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|(_, value)| value.as_ref())
    }
}

impl Val for SortedMap<'_> {
    fn get_type(&self) -> &Type {
        &types::MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &types::MAP_TYPE
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(self.clone())
    }
}

impl Container for SortedMap<'_> {
    fn contains(&self, key: &dyn Val) -> Result<bool, ExecutionError> {
        match key.downcast_ref::<CelString>() {
            Some(key) => Ok(self.find(key.inner()).is_some()),
            None => Err(ExecutionError::UnexpectedType {
                got: key.get_type().name().to_owned(),
                want: "string".to_owned(),
            }),
        }
    }
}

impl Indexer for SortedMap<'_> {
    fn get<'b, 'w>(&'b self, key: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let Some(key) = key.downcast_ref::<CelString>() else {
            return Err(ExecutionError::UnexpectedType {
                got: key.get_type().name().to_owned(),
                want: "string".to_owned(),
            });
        };
        match self.find(key.inner()).or(self.missing.as_deref()) {
            Some(value) => Ok(CowVal::Borrowed(value)),
            None => Err(ExecutionError::no_such_key(key.inner())),
        }
    }

    fn steal<'w>(self: Box<Self>, key: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(key).map(CowVal::into_owned)
    }
}

impl<'v> Iterable for SortedMap<'v> {
    fn iter<'b, 'w>(&'b self) -> Box<dyn cel::common::traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        Box::new(SortedKeys(self.entries.iter()))
    }
}

impl Sizer for SortedMap<'_> {
    fn size(&self) -> CelInt {
        CelInt::from(i64::try_from(self.entries.len()).unwrap_or(i64::MAX))
    }
}

/// The keys of a [`SortedMap`], in order, for the comprehensions.
struct SortedKeys<'b, 'v>(std::slice::Iter<'b, (CelString<'v>, Box<dyn Val + 'v>)>);

impl<'b, 'v: 'w, 'w> cel::common::traits::Iterator<'b, 'w> for SortedKeys<'b, 'v> {
    fn next(&mut self) -> Option<&'b (dyn Val + 'w)> {
        self.0.next().map(|(key, _)| key as &'b (dyn Val + 'w))
    }
}

/// `kubernetes.Quantity`, the type of quantities.
static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// `kubernetes.Semver`, the type of semantic versions.
static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A quantity value (`apiservercel.Quantity`).
#[derive(Debug, Clone, Copy)]
struct QuantityVal(Quantity);

impl Val for QuantityVal {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }

    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }

    /// Equal values (`200M == 0.2G`), as `Quantity.Equal`.
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<QuantityVal>()
            .is_some_and(|other| other.0 == self.0)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for QuantityVal {}

/// A semantic version value (`apiservercel.Semver`).
#[derive(Debug, Clone)]
struct SemverVal(Semver);

impl Val for SemverVal {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }

    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }

    /// Equal precedence (build metadata ignored), as `Version.EQ`.
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<SemverVal>()
            .is_some_and(|other| other.0.cmp(&self.0) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for SemverVal {}

/// An overload's result or error.
type CallResult<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// The `N` arguments of an overload (the target first for a member).
fn arguments<'b, 'v, const N: usize>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

/// An argument of the wrong type (the overloads are declared for their
/// types, so only a mistake here gets one).
fn unexpected(value: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType {
        got: value.get_type().name().to_owned(),
        want: want.to_owned(),
    }
}

/// A `string` argument.
fn string_arg<'b>(value: &'b CowVal<'_, '_>) -> Result<&'b str, ExecutionError> {
    value
        .downcast_ref::<CelString>()
        .map(CelString::inner)
        .ok_or_else(|| unexpected(value.as_ref(), "string"))
}

/// A `bool` argument.
fn bool_arg(value: &CowVal<'_, '_>) -> Result<bool, ExecutionError> {
    value
        .downcast_ref::<CelBool>()
        .map(|b| *b.inner())
        .ok_or_else(|| unexpected(value.as_ref(), "bool"))
}

/// An `int` argument.
fn int_arg(value: &CowVal<'_, '_>) -> Result<i64, ExecutionError> {
    value
        .downcast_ref::<CelInt>()
        .map(|i| *i.inner())
        .ok_or_else(|| unexpected(value.as_ref(), "int"))
}

/// A quantity argument.
fn quantity_arg(value: &CowVal<'_, '_>) -> Result<Quantity, ExecutionError> {
    value
        .downcast_ref::<QuantityVal>()
        .map(|q| q.0)
        .ok_or_else(|| unexpected(value.as_ref(), QUANTITY_TYPE.name()))
}

/// A semantic version argument.
fn semver_arg<'b>(value: &'b CowVal<'_, '_>) -> Result<&'b Semver, ExecutionError> {
    value
        .downcast_ref::<SemverVal>()
        .map(|v| &v.0)
        .ok_or_else(|| unexpected(value.as_ref(), SEMVER_TYPE.name()))
}

/// A new value.
fn owned<'b, 'v, T: Val + 'v>(value: T) -> CallResult<'b, 'v> {
    Ok(CowVal::owned(value))
}

/// An ordering as `-1`, `0` or `1`.
fn ordering_int(ordering: Ordering) -> CelInt {
    CelInt::from(match ordering {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    })
}

/// `quantity(string)`.
fn string_to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [text] = arguments(args)?;
    let quantity = Quantity::parse(string_arg(&text)?)
        .map_err(|error| ExecutionError::function_error("quantity", error))?;
    owned(QuantityVal(quantity))
}

/// `isQuantity(string)`.
fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [text] = arguments(args)?;
    owned(CelBool::from(Quantity::parse(string_arg(&text)?).is_ok()))
}

/// `sign(quantity)`: `-1`, `0` or `1`.
fn quantity_sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [q] = arguments(args)?;
    owned(ordering_int(quantity_arg(&q)?.nanos().cmp(&0)))
}

/// The ordering of a member call's target and argument.
fn compare_quantities(args: Vec<CowVal<'_, '_>>) -> Result<Ordering, ExecutionError> {
    let [a, b] = arguments(args)?;
    Ok(quantity_arg(&a)?.cmp(&quantity_arg(&b)?))
}

/// `q.isGreaterThan(quantity)`.
fn quantity_is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    owned(CelBool::from(
        compare_quantities(args)? == Ordering::Greater,
    ))
}

/// `q.isLessThan(quantity)`.
fn quantity_is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    owned(CelBool::from(compare_quantities(args)? == Ordering::Less))
}

/// `q.compareTo(quantity)`: `-1`, `0` or `1`.
fn quantity_compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    owned(ordering_int(compare_quantities(args)?))
}

/// Nano-units in one unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// The quantity as an `int`, if it is a whole number that fits
/// (`Quantity.AsInt64`).
fn as_int64(quantity: Quantity) -> Option<i64> {
    let nanos = quantity.nanos();
    if nanos % NANOS_PER_UNIT != 0 {
        return None;
    }
    i64::try_from(nanos / NANOS_PER_UNIT).ok()
}

/// `q.asApproximateFloat()`.
fn quantity_as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [q] = arguments(args)?;
    // i128 to f64 rounds to the nearest double, as intended here.
    let value = quantity_arg(&q)?.nanos() as f64 / 1e9;
    owned(CelDouble::from(value))
}

/// `q.asInteger()`, an error when not a whole `int`.
fn quantity_as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [q] = arguments(args)?;
    match as_int64(quantity_arg(&q)?) {
        Some(value) => owned(CelInt::from(value)),
        None => Err(ExecutionError::function_error(
            "asInteger",
            "cannot convert value to integer",
        )),
    }
}

/// `q.isInteger()`: whether `asInteger` succeeds.
fn quantity_is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [q] = arguments(args)?;
    owned(CelBool::from(as_int64(quantity_arg(&q)?).is_some()))
}

/// The sum or difference of two values in nano-units, as a quantity.
fn quantity_arithmetic<'b, 'v>(
    function: &str,
    a: i128,
    b: i128,
    subtract: bool,
) -> CallResult<'b, 'v> {
    let result = if subtract {
        a.checked_sub(b)
    } else {
        a.checked_add(b)
    };
    match result {
        Some(nanos) => owned(QuantityVal(Quantity::from_nanos(nanos))),
        None => Err(ExecutionError::function_error(
            function,
            "quantity too large",
        )),
    }
}

/// `q.add(quantity)`.
fn quantity_add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [a, b] = arguments(args)?;
    quantity_arithmetic(
        "add",
        quantity_arg(&a)?.nanos(),
        quantity_arg(&b)?.nanos(),
        false,
    )
}

/// `q.add(int)`.
fn quantity_add_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [a, b] = arguments(args)?;
    let b = i128::from(int_arg(&b)?) * NANOS_PER_UNIT;
    quantity_arithmetic("add", quantity_arg(&a)?.nanos(), b, false)
}

/// `q.sub(quantity)`.
fn quantity_sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [a, b] = arguments(args)?;
    quantity_arithmetic(
        "sub",
        quantity_arg(&a)?.nanos(),
        quantity_arg(&b)?.nanos(),
        true,
    )
}

/// `q.sub(int)`.
fn quantity_sub_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [a, b] = arguments(args)?;
    let b = i128::from(int_arg(&b)?) * NANOS_PER_UNIT;
    quantity_arithmetic("sub", quantity_arg(&a)?.nanos(), b, true)
}

/// Parses `text` into a version, normalized first if asked.
fn parse_semver(text: &str, normalize: bool) -> Result<Semver, String> {
    if normalize {
        Semver::parse_normalized(text)
    } else {
        Semver::parse(text)
    }
}

/// `semver(string)`.
fn string_to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [text] = arguments(args)?;
    let version = parse_semver(string_arg(&text)?, false)
        .map_err(|error| ExecutionError::function_error("semver", error))?;
    owned(SemverVal(version))
}

/// `semver(string, normalize)`.
fn string_bool_to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [text, normalize] = arguments(args)?;
    let version = parse_semver(string_arg(&text)?, bool_arg(&normalize)?)
        .map_err(|error| ExecutionError::function_error("semver", error))?;
    owned(SemverVal(version))
}

/// `isSemver(string)`.
fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [text] = arguments(args)?;
    owned(CelBool::from(
        parse_semver(string_arg(&text)?, false).is_ok(),
    ))
}

/// `isSemver(string, normalize)`.
fn is_semver_bool<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [text, normalize] = arguments(args)?;
    let parsed = parse_semver(string_arg(&text)?, bool_arg(&normalize)?);
    owned(CelBool::from(parsed.is_ok()))
}

/// The ordering of a member call's target and argument.
fn compare_semvers(args: Vec<CowVal<'_, '_>>) -> Result<Ordering, ExecutionError> {
    let [a, b] = arguments(args)?;
    Ok(semver_arg(&a)?.cmp(semver_arg(&b)?))
}

/// `v.isGreaterThan(semver)`.
fn semver_is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    owned(CelBool::from(compare_semvers(args)? == Ordering::Greater))
}

/// `v.isLessThan(semver)`.
fn semver_is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    owned(CelBool::from(compare_semvers(args)? == Ordering::Less))
}

/// `v.compareTo(semver)`: `-1`, `0` or `1`.
fn semver_compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    owned(ordering_int(compare_semvers(args)?))
}

/// A version number as an `int`, wrapping as Go's `int64(uint64)` does.
fn version_number(number: u64) -> CelInt {
    CelInt::from(i64::from_ne_bytes(number.to_ne_bytes()))
}

/// `v.major()`.
fn semver_major<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [v] = arguments(args)?;
    owned(version_number(semver_arg(&v)?.major))
}

/// `v.minor()`.
fn semver_minor<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [v] = arguments(args)?;
    owned(version_number(semver_arg(&v)?.minor))
}

/// `v.patch()`.
fn semver_patch<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let [v] = arguments(args)?;
    owned(version_number(semver_arg(&v)?.patch))
}

/// A semantic version 2.0.0, as `github.com/blang/semver/v4` parses and
/// orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Semver {
    /// Major version.
    major: u64,
    /// Minor version.
    minor: u64,
    /// Patch version.
    patch: u64,
    /// Pre-release identifiers.
    pre: Vec<PreRelease>,
    /// Build metadata (ignored when ordering).
    build: Vec<String>,
}

/// One pre-release identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PreRelease {
    /// All digits.
    Number(u64),
    /// Letters, digits and `-`.
    Text(String),
}

impl PreRelease {
    /// Numbers before text, numbers by value, text by bytes (`PRVersion.Compare`).
    fn compare(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PreRelease::Number(a), PreRelease::Number(b)) => a.cmp(b),
            (PreRelease::Number(_), PreRelease::Text(_)) => Ordering::Less,
            (PreRelease::Text(_), PreRelease::Number(_)) => Ordering::Greater,
            (PreRelease::Text(a), PreRelease::Text(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Semver {
    /// Precedence (`Version.Compare`): numbers, then a release after its
    /// pre-releases, then pre-release identifiers one by one, the longer
    /// list winning a tie. Build metadata does not count.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self
                    .pre
                    .iter()
                    .zip(&other.pre)
                    .map(|(a, b)| a.compare(b))
                    .find(|ordering| ordering.is_ne())
                    .unwrap_or_else(|| self.pre.len().cmp(&other.pre.len())),
            })
    }
}

impl fmt::Display for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, pre) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            match pre {
                PreRelease::Number(n) => write!(f, "{n}")?,
                PreRelease::Text(t) => f.write_str(t)?,
            }
        }
        for (i, build) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(build)?;
        }
        Ok(())
    }
}

/// Whether `text` is only ASCII digits (true when empty, like Go's
/// `containsOnly`).
fn only_digits(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `text` is only letters, digits and `-`.
fn only_alphanumeric(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A number of more than one digit starting with `0`.
fn has_leading_zeroes(text: &str) -> bool {
    text.len() > 1 && text.starts_with('0')
}

/// `strconv.ParseUint(text, 10, 64)` of a string of digits.
fn parse_uint(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| {
        let reason = if text.is_empty() {
            "invalid syntax"
        } else {
            "value out of range"
        };
        format!("strconv.ParseUint: parsing {text:?}: {reason}")
    })
}

/// A major, minor or patch number.
fn parse_version_number(text: &str, which: &str) -> Result<u64, String> {
    if !only_digits(text) {
        return Err(format!(
            "Invalid character(s) found in {} number {text:?}",
            which.to_lowercase()
        ));
    }
    if has_leading_zeroes(text) {
        return Err(format!(
            "{which} number must not contain leading zeroes {text:?}"
        ));
    }
    parse_uint(text)
}

impl Semver {
    /// `semver.Parse`: strict `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, with its
    /// error texts.
    fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("Version string empty".to_owned());
        }
        let parts: Vec<&str> = text.splitn(3, '.').collect();
        let [major, minor, rest] = parts.as_slice() else {
            return Err("No Major.Minor.Patch elements found".to_owned());
        };
        let major = parse_version_number(major, "Major")?;
        let minor = parse_version_number(minor, "Minor")?;
        let (rest, build) = match rest.split_once('+') {
            Some((rest, build)) => (rest, build.split('.').collect()),
            None => (*rest, Vec::new()),
        };
        let (patch, pre) = match rest.split_once('-') {
            Some((patch, pre)) => (patch, pre.split('.').collect()),
            None => (rest, Vec::new()),
        };
        let patch = parse_version_number(patch, "Patch")?;
        let pre = pre
            .into_iter()
            .map(|identifier: &str| {
                if identifier.is_empty() {
                    Err("Prerelease is empty".to_owned())
                } else if only_digits(identifier) {
                    if has_leading_zeroes(identifier) {
                        return Err(format!(
                            "Numeric PreRelease version must not contain leading zeroes \
                             {identifier:?}"
                        ));
                    }
                    parse_uint(identifier).map(PreRelease::Number)
                } else if only_alphanumeric(identifier) {
                    Ok(PreRelease::Text(identifier.to_owned()))
                } else {
                    Err(format!(
                        "Invalid character(s) found in prerelease {identifier:?}"
                    ))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let build = build
            .into_iter()
            .map(|identifier: &str| {
                if identifier.is_empty() {
                    Err("Build meta data is empty".to_owned())
                } else if only_alphanumeric(identifier) {
                    Ok(identifier.to_owned())
                } else {
                    Err(format!(
                        "Invalid character(s) found in build meta data {identifier:?}"
                    ))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            major,
            minor,
            patch,
            pre,
            build,
        })
    }

    /// The Kubernetes library's `normalizeAndParse`: without a leading `v`,
    /// leading zeroes dropped, a missing minor or patch filled with `0`.
    fn parse_normalized(text: &str) -> Result<Self, String> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts: Vec<String> = text
            .splitn(3, '.')
            .map(|part| {
                if part.len() <= 1 {
                    return part.to_owned();
                }
                let trimmed = part.trim_start_matches('0');
                if trimmed.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
                    trimmed.to_owned()
                } else {
                    format!("0{trimmed}")
                }
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
                return Err("short version cannot contain PreRelease/Build meta data".to_owned());
            }
            parts.resize(3, "0".to_owned());
        }
        Self::parse(&parts.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

    /// The driver of most test devices.
    const DRIVER: &str = "dra.example.com";

    /// One device to evaluate selectors against.
    #[derive(Default)]
    struct Device {
        /// Its driver.
        driver: &'static str,
        /// Its attributes.
        attributes: BTreeMap<String, DeviceAttribute>,
        /// Its capacities.
        capacity: BTreeMap<String, DeviceCapacity>,
        /// `allowMultipleAllocations`.
        allow_multiple_allocations: bool,
    }

    impl Device {
        /// A device of `driver` with nothing else.
        fn of(driver: &'static str) -> Self {
            Self {
                driver,
                ..Self::default()
            }
        }

        /// With an attribute.
        fn attribute(mut self, name: &str, attribute: DeviceAttribute) -> Self {
            self.attributes.insert(name.to_owned(), attribute);
            self
        }

        /// With a `bool` attribute.
        fn bool(self, name: &str, value: bool) -> Self {
            self.attribute(
                name,
                DeviceAttribute {
                    bool: Some(value),
                    ..Default::default()
                },
            )
        }

        /// With an `int` attribute.
        fn int(self, name: &str, value: i64) -> Self {
            self.attribute(
                name,
                DeviceAttribute {
                    int: Some(value),
                    ..Default::default()
                },
            )
        }

        /// With a `string` attribute.
        fn string(self, name: &str, value: &str) -> Self {
            self.attribute(
                name,
                DeviceAttribute {
                    string: Some(value.to_owned()),
                    ..Default::default()
                },
            )
        }

        /// With a `version` attribute.
        fn version(self, name: &str, value: &str) -> Self {
            self.attribute(
                name,
                DeviceAttribute {
                    version: Some(value.to_owned()),
                    ..Default::default()
                },
            )
        }

        /// With a capacity.
        fn capacity(mut self, name: &str, value: &str) -> Self {
            self.capacity.insert(
                name.to_owned(),
                DeviceCapacity {
                    value: ApiQuantity(value.to_owned()),
                    request_policy: None,
                },
            );
            self
        }

        /// Compiles `expression` (failing the test on an error) and evaluates it.
        fn eval(&self, expression: &str) -> Result<bool, String> {
            let selector = CompiledSelector::compile(expression)
                .unwrap_or_else(|error| panic!("{expression}: compile error: {error}"));
            selector.matches(&DeviceInput {
                driver: self.driver,
                attributes: Some(&self.attributes),
                capacity: Some(&self.capacity),
                allow_multiple_allocations: self.allow_multiple_allocations,
            })
        }
    }

    /// Whether `expression` selects `device`, failing the test on an error.
    fn selects(device: &Device, expression: &str) -> bool {
        device
            .eval(expression)
            .unwrap_or_else(|error| panic!("{expression}: runtime error: {error}"))
    }

    /// The runtime error of `expression` on `device`.
    fn runtime_error(device: &Device, expression: &str) -> String {
        match device.eval(expression) {
            Ok(matched) => panic!("{expression}: no error, matched = {matched}"),
            Err(error) => error,
        }
    }

    /// The compile error of `expression`.
    fn compile_error(expression: &str) -> String {
        match CompiledSelector::compile(expression) {
            Ok(_) => panic!("{expression}: compiled"),
            Err(error) => error,
        }
    }

    /// Evaluates a device-independent expression.
    fn holds(expression: &str) -> bool {
        selects(&Device::of(DRIVER), expression)
    }

    #[test]
    fn literal_true_selects_and_false_does_not() {
        assert!(holds("true"));
        assert!(!holds("false"));
    }

    #[test]
    fn a_syntax_error_is_a_compile_error() {
        let error = compile_error("?!");
        assert!(error.contains("Syntax error"), "{error}");
        assert!(error.starts_with("compilation failed: "), "{error}");
    }

    #[test]
    fn a_literal_of_another_type_than_bool_is_a_compile_error() {
        assert_eq!(
            compile_error("1"),
            "must evaluate to bool or the unknown type, not int"
        );
        assert_eq!(
            compile_error(r#""x""#),
            "must evaluate to bool or the unknown type, not string"
        );
    }

    #[test]
    fn an_unknown_variable_is_a_compile_error() {
        let error = compile_error(r#"devices.driver == "x""#);
        assert!(
            error.contains("undeclared reference to 'devices'"),
            "{error}"
        );
        assert!(error.contains("<input>:1:1:"), "{error}");
    }

    #[test]
    fn comprehension_and_bind_variables_are_declared() {
        assert!(CompiledSelector::compile("[1, 2].all(x, x > 0)").is_ok());
        assert!(CompiledSelector::compile("cel.bind(a, 1, a == 1)").is_ok());
        assert!(CompiledSelector::compile("optional.of(1).hasValue()").is_ok());
        assert!(CompiledSelector::compile("type(1) == int").is_ok());
        let error = compile_error("[1, 2].all(x, y > 0)");
        assert!(error.contains("undeclared reference to 'y'"), "{error}");
        // The loop variable is out of scope in the result of a later macro.
        let error = compile_error("[1].all(x, true) && x == 1");
        assert!(error.contains("undeclared reference to 'x'"), "{error}");
    }

    #[test]
    fn a_missing_attribute_of_a_missing_domain_is_a_no_such_key_error() {
        let device = Device::of("");
        for expression in [
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
        ] {
            assert_eq!(
                runtime_error(&device, expression),
                "no such key: noSuchAttr"
            );
        }
    }

    #[test]
    fn in_tests_the_domains_the_device_has() {
        let device = Device::of("").bool("dra.example.com/something", true);
        assert!(!selects(
            &device,
            r#""no-such-domain" in device.attributes"#
        ));
        assert!(selects(
            &device,
            r#""dra.example.com" in device.attributes"#
        ));
        assert!(!selects(
            &Device::of(""),
            r#""dra.example.com" in device.attributes"#
        ));
    }

    #[test]
    fn a_missing_domain_is_an_empty_map() {
        let device = Device::of(DRIVER).bool("x", true);
        assert!(!selects(
            &device,
            r#""x" in device.attributes["other.com"]"#
        ));
        assert!(!selects(
            &device,
            r#"has(device.attributes["other.com"].x)"#
        ));
        assert!(selects(
            &device,
            r#"size(device.attributes["other.com"]) == 0"#
        ));
        assert!(selects(
            &device,
            r#"has(device.attributes["dra.example.com"].x)"#
        ));
        assert!(selects(
            &device,
            r#""x" in device.attributes["dra.example.com"]"#
        ));
        assert_eq!(
            runtime_error(&device, r#"device.attributes["other.com"].x"#),
            "no such key: x"
        );
        assert_eq!(
            runtime_error(
                &device,
                r#"device.capacity["other.com"].memory.isGreaterThan(quantity("1"))"#
            ),
            "no such key: memory"
        );
    }

    #[test]
    fn driver_is_the_drivers_name() {
        assert!(selects(&Device::of(""), r#"device.driver == """#));
        assert!(selects(
            &Device::of(DRIVER),
            r#"device.driver == "dra.example.com""#
        ));
        assert!(!selects(
            &Device::of("other"),
            r#"device.driver == "dra.example.com""#
        ));
    }

    #[test]
    fn a_short_name_is_in_the_drivers_domain() {
        let device = Device::of(DRIVER).bool("name", true);
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].name"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"]["name"]"#
        ));
        assert!(!selects(
            &device,
            r#""name" in device.attributes["other.example.com"]"#
        ));
    }

    #[test]
    fn a_qualified_name_is_in_its_own_domain() {
        let device = Device::of(DRIVER).bool("other.example.com/name", true);
        assert!(selects(
            &device,
            r#"device.attributes["other.example.com"].name"#
        ));
        assert!(!selects(
            &device,
            r#""name" in device.attributes["dra.example.com"]"#
        ));
    }

    #[test]
    fn bind_names_a_domain() {
        let device = Device::of(DRIVER).bool("name", true);
        assert!(selects(
            &device,
            r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#
        ));
        let error = compile_error(r#"cel.bind(a.b, 1, true)"#);
        assert!(
            error.contains("variable names must be simple identifiers"),
            "{error}"
        );
    }

    #[test]
    fn bool_int_and_string_attributes_have_their_cel_types() {
        let device = Device::of(DRIVER)
            .bool("bool", true)
            .int("int", 1)
            .string("string", "fish");
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].bool"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].int > 0"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].string == "fish""#
        ));
        assert!(selects(
            &device,
            r#"type(device.attributes["dra.example.com"].int) == int"#
        ));
    }

    #[test]
    fn a_result_that_is_not_a_bool_is_a_runtime_error() {
        let device = Device::of(DRIVER).int("name", 1);
        let error = runtime_error(&device, r#"device.attributes["dra.example.com"].name"#);
        assert!(
            error.starts_with("CEL result of type int could not be converted to bool"),
            "{error}"
        );
        let error = runtime_error(&device, r#"device.attributes"#);
        assert!(
            error.starts_with("CEL result of type map could not be converted to bool"),
            "{error}"
        );
    }

    #[test]
    fn versions_compare_as_semantic_versions() {
        let device = Device::of(DRIVER).version("name", "1.0.0");
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].name == semver("1.0.0")"#
        ));
        assert!(!selects(
            &device,
            r#"device.attributes["dra.example.com"].name == semver("1.0.1")"#
        ));
    }

    #[test]
    fn an_invalid_version_attribute_fails_every_selector() {
        let device = Device::of(DRIVER).version("name", "v1");
        assert_eq!(
            runtime_error(&device, "true"),
            "attribute name: parse semantic version: No Major.Minor.Patch elements found"
        );
    }

    #[test]
    fn an_attribute_without_a_value_fails_every_selector() {
        let device = Device::of(DRIVER).attribute("name", DeviceAttribute::default());
        assert_eq!(
            runtime_error(&device, "true"),
            "attribute name: unsupported attribute value"
        );
    }

    #[test]
    fn capacities_compare_as_quantities() {
        let device = Device::of(DRIVER).capacity("name", "1Mi");
        assert!(selects(
            &device,
            r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#
        ));
        assert!(selects(
            &device,
            r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#
        ));
        assert!(selects(
            &device,
            r#"device.capacity["dra.example.com"].name == quantity("1048576")"#
        ));
        assert!(!selects(
            &device,
            r#"device.capacity["dra.example.com"].name.isLessThan(quantity("1M"))"#
        ));
    }

    #[test]
    fn guarding_a_missing_capacity_with_in_avoids_the_error() {
        assert!(selects(
            &Device::of(""),
            r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#
        ));
    }

    #[test]
    fn every_kind_of_value_in_one_expression() {
        let device = Device::of(DRIVER)
            .bool("bool", true)
            .int("int", 1)
            .string("string", "fish")
            .version("version", "1.0.0")
            .capacity("quantity", "1Mi");
        assert!(selects(
            &device,
            r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#
        ));
    }

    #[test]
    fn all_conjuncts_must_hold() {
        let device = Device::of(DRIVER)
            .bool("a", true)
            .bool("b", true)
            .bool("c", false);
        let expression = r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#;
        assert!(!selects(&device, expression));
        let device = Device::of(DRIVER)
            .bool("a", true)
            .bool("b", true)
            .bool("c", true);
        assert!(selects(&device, expression));
    }

    #[test]
    fn comprehensions_iterate_over_domains_and_ids() {
        let device = Device::of(DRIVER)
            .string("services", "some_example_value")
            .capacity("memory", "1Mi");
        assert!(selects(
            &device,
            r#"device.attributes.exists_one(x, x == "dra.example.com")"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#
        ));
        assert!(selects(
            &device,
            r#"device.capacity.exists_one(x, x == "dra.example.com")"#
        ));
        assert!(selects(
            &device,
            r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#
        ));
        assert!(!selects(
            &device,
            r#"device.attributes.exists(x, x == "other.com")"#
        ));
        assert!(selects(&device, "size(device.attributes) == 1"));
    }

    #[test]
    fn comprehensions_visit_keys_in_sorted_order() {
        let device = Device::of(DRIVER)
            .int("c", 3)
            .int("a", 1)
            .int("b", 2)
            .bool("z.example.com/x", true);
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].map(k, k) == ["a", "b", "c"]"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes.map(d, d) == ["dra.example.com", "z.example.com"]"#
        ));
    }

    #[test]
    fn string_functions_apply_to_attributes() {
        let device = Device::of(DRIVER).string("services", "some_example_value");
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#
        ));
        let device = Device::of(DRIVER).string("services", "asymetric");
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#
        ));
        assert!(selects(
            &device,
            r#"device.attributes["dra.example.com"].services.startsWith("asy")"#
        ));
    }

    #[test]
    fn allow_multiple_allocations_defaults_to_false() {
        let mut device = Device::of(DRIVER);
        assert!(selects(&device, "device.allowMultipleAllocations == false"));
        device.allow_multiple_allocations = true;
        assert!(selects(&device, "device.allowMultipleAllocations == true"));
    }

    #[test]
    fn a_missing_field_of_device_is_a_no_such_key_error() {
        assert_eq!(
            runtime_error(&Device::of(DRIVER), "device.name == \"x\""),
            "no such key: name"
        );
    }

    #[test]
    fn quantity_parse_errors_keep_the_kubernetes_text() {
        let error = runtime_error(&Device::of(DRIVER), r#"quantity("10Mo").sign() == 0"#);
        assert!(
            error.starts_with("quantities must match the regular expression"),
            "{error}"
        );
        assert_eq!(
            runtime_error(&Device::of(DRIVER), r#"sign(quantity("10Mm")) == 0"#),
            "unable to parse quantity's suffix"
        );
    }

    #[test]
    fn is_quantity_accepts_what_quantity_parses() {
        assert!(holds(
            r#"isQuantity("20") && isQuantity("20M") && isQuantity("20Mi")"#
        ));
        assert!(holds(
            r#"!isQuantity("20Mo") && !isQuantity("10Mm") && !isQuantity("1,3G")"#
        ));
    }

    #[test]
    fn quantity_equality_is_by_value() {
        assert!(holds(r#"quantity("200M") == quantity("200M")"#));
        assert!(holds(
            r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#
        ));
        assert!(holds(
            r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M")"#
        ));
        assert!(!holds(r#"quantity("200M") == quantity("0.3G")"#));
    }

    #[test]
    fn quantity_comparisons() {
        assert!(holds(r#"quantity("50M").isLessThan(quantity("50Mi"))"#));
        assert!(!holds(r#"quantity("100M").isLessThan(quantity("50M"))"#));
        assert!(holds(r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#));
        assert!(!holds(r#"quantity("50M").isGreaterThan(quantity("100M"))"#));
        assert!(holds(
            r#"quantity("200M").compareTo(quantity("0.2G")) == 0"#
        ));
        assert!(holds(
            r#"quantity("50M").compareTo(quantity("50Mi")) == -1"#
        ));
        assert!(holds(r#"quantity("50Mi").compareTo(quantity("50M")) == 1"#));
    }

    #[test]
    fn quantity_arithmetic_and_conversions() {
        assert!(holds(
            r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#
        ));
        assert!(!holds(
            r#"quantity("50k").add(20).isLessThan(quantity("50020"))"#
        ));
        assert!(holds(
            r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#
        ));
        assert!(holds(r#"quantity("50k").sub(20) == quantity("49980")"#));
        assert!(holds(
            r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20"#
        ));
        assert!(holds(r#"quantity("50k").asInteger() == 50000"#));
        assert!(holds(
            r#"quantity("50").isInteger() && !quantity("1500m").isInteger()"#
        ));
        assert!(holds(r#"quantity("2000m").asInteger() == 2"#));
        assert!(holds(
            r#"quantity("50.703k").asApproximateFloat() == 50703.0"#
        ));
        assert!(holds(
            r#"sign(quantity("-1")) == -1 && sign(quantity("0")) == 0 && sign(quantity("1m")) == 1"#
        ));
        assert_eq!(
            runtime_error(&Device::of(DRIVER), r#"quantity("1.5").asInteger() == 1"#),
            "cannot convert value to integer"
        );
        assert!(!holds(r#"quantity("9999999999999999999G").isInteger()"#));
    }

    #[test]
    fn sign_is_not_a_member_function() {
        let error = runtime_error(&Device::of(DRIVER), r#"quantity("1").sign() == 1"#);
        assert!(error.contains("sign"), "{error}");
    }

    #[test]
    fn semver_parse_errors_keep_the_blang_text() {
        assert_eq!(
            runtime_error(&Device::of(DRIVER), r#"semver("v1.0").major() == 1"#),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(
            runtime_error(&Device::of(DRIVER), r#"semver("01.0.0").major() == 1"#),
            r#"Major number must not contain leading zeroes "01""#
        );
    }

    #[test]
    fn is_semver_is_strict_unless_normalizing() {
        assert!(holds(r#"isSemver("1.2.3-beta.1+build.1")"#));
        for text in [
            "", "v1.0.0", " 1.0.0", "1. 0.0", "1.0.0 ", "01.01.01", "1", "1.1",
        ] {
            assert!(!holds(&format!("isSemver({text:?})")), "{text:?}");
        }
        for text in ["v1.0.0", "01.01.01", "1", "1.1"] {
            assert!(holds(&format!("isSemver({text:?}, true)")), "{text:?}");
        }
        for text in ["", " 1.0.0", "1. 0.0", "1.0.0 ", "1-beta"] {
            assert!(!holds(&format!("isSemver({text:?}, true)")), "{text:?}");
        }
        assert!(holds(r#"semver("v01.01", true) == semver("1.1.0")"#));
    }

    #[test]
    fn semver_comparisons_and_components() {
        assert!(holds(r#"semver("1.2.3") == semver("1.2.3")"#));
        assert!(!holds(r#"semver("1.2.3") == semver("1.0.0")"#));
        assert!(holds(r#"semver("1.0.0").isLessThan(semver("1.2.3"))"#));
        assert!(!holds(r#"semver("1.0.0").isLessThan(semver("1.0.0"))"#));
        assert!(holds(r#"semver("1.2.3").isGreaterThan(semver("1.0.0"))"#));
        assert!(holds(r#"semver("1.2.3").compareTo(semver("1.2.3")) == 0"#));
        assert!(holds(r#"semver("1.0.0").compareTo(semver("1.2.3")) == -1"#));
        assert!(holds(r#"semver("1.2.3").compareTo(semver("1.0.0")) == 1"#));
        assert!(holds(
            r#"semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3"#
        ));
    }

    #[test]
    fn pre_releases_order_before_their_release() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
        ];
        for pair in ordered.windows(2) {
            let expression = format!("semver({:?}).isLessThan(semver({:?}))", pair[0], pair[1]);
            assert!(holds(&expression), "{expression}");
        }
        assert!(holds(
            r#"semver("1.0.0+build.1") == semver("1.0.0+build.2")"#
        ));
    }

    #[test]
    fn semver_parse_keeps_every_part() {
        let version = Semver::parse("1.2.3-rc.1.x-y+build.007").expect("valid");
        assert_eq!(version.to_string(), "1.2.3-rc.1.x-y+build.007");
        assert_eq!(
            version.pre,
            [
                PreRelease::Text("rc".to_owned()),
                PreRelease::Number(1),
                PreRelease::Text("x-y".to_owned())
            ]
        );
        for (text, error) in [
            ("", "Version string empty"),
            ("1.0", "No Major.Minor.Patch elements found"),
            ("a.0.0", r#"Invalid character(s) found in major number "a""#),
            (
                "1.00.0",
                r#"Minor number must not contain leading zeroes "00""#,
            ),
            ("1.0.0-", "Prerelease is empty"),
            (
                "1.0.0-01",
                r#"Numeric PreRelease version must not contain leading zeroes "01""#,
            ),
            (
                "1.0.0-a_b",
                r#"Invalid character(s) found in prerelease "a_b""#,
            ),
            ("1.0.0+", "Build meta data is empty"),
            ("1..0", r#"strconv.ParseUint: parsing "": invalid syntax"#),
        ] {
            assert_eq!(Semver::parse(text), Err(error.to_owned()), "{text:?}");
        }
    }

    #[test]
    fn a_wrong_argument_type_is_a_no_such_overload_error() {
        let device = Device::of(DRIVER).int("name", 1);
        let error = runtime_error(
            &device,
            r#"device.attributes["dra.example.com"].name.isGreaterThan(quantity("0"))"#,
        );
        assert_eq!(
            error,
            "no such overload: isGreaterThan(int, kubernetes.Quantity)"
        );
    }

    #[test]
    fn a_compiled_selector_can_be_shared_and_reused() {
        let selector = CompiledSelector::compile(r#"device.attributes["dra.example.com"].n > 1"#)
            .expect("compiles");
        let shared = selector.clone();
        let small = Device::of(DRIVER).int("n", 1);
        let large = Device::of(DRIVER).int("n", 2);
        /// What the selector sees of `d`.
        fn input(d: &Device) -> DeviceInput<'_> {
            DeviceInput {
                driver: d.driver,
                attributes: Some(&d.attributes),
                capacity: Some(&d.capacity),
                allow_multiple_allocations: false,
            }
        }
        assert_eq!(selector.matches(&input(&small)), Ok(false));
        assert_eq!(shared.matches(&input(&large)), Ok(true));
        let none = DeviceInput {
            driver: DRIVER,
            attributes: None,
            capacity: None,
            allow_multiple_allocations: false,
        };
        assert_eq!(selector.matches(&none), Err("no such key: n".to_owned()));
    }
}
