//! One pass over a lexed file that decides, for every conditional group over features,
//! whether it can be encoded and how: it follows the file's brace, parenthesis and statement
//! structure through every branch (each branch starts from the state its group opened in),
//! and checks each decision group against the disciplined patterns.

use std::collections::{BTreeMap, BTreeSet};

use crate::condition::{self, Condition};
use crate::lex::{Lexed, Token, TokenKind};
use crate::lift::{self, Lift, Local};
use crate::{Feature, Pattern};

/// How a conditional group over features is encoded.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Every branch's condition is the same in every variant: `#if 0` / `#if 1`.
    Constant,
    /// Whole statements in a function body: an `if` chain.
    Statements,
    /// Whole definitions at file scope: every branch kept, functions defined in several
    /// branches renamed and dispatched.
    Definitions(Vec<Dispatch>),
}

/// A function defined in several branches of one group.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub name: String,
    /// Per definition: its branch and the token of its name.
    pub variants: Vec<(usize, usize)>,
    /// The first definition's header (tokens from its first to its `{`).
    pub header: (usize, usize),
    pub arguments: Vec<String>,
    pub returns_void: bool,
}

/// A group over features that is encoded, with its directives (indices into
/// `Lexed::directives`) and each branch's condition (None for `#else`).
#[derive(Debug, Clone)]
pub struct GroupPlan {
    pub directives: Vec<usize>,
    pub conditions: Vec<Option<Condition>>,
    pub plan: Plan,
    /// Statements: the declarations lifted out of the group.
    pub lift: Option<Lift>,
}

#[derive(Debug, Default)]
pub struct Scanned {
    /// (line, pattern, feature macro).
    pub refusals: Vec<(usize, Pattern, String)>,
    pub groups: Vec<GroupPlan>,
    /// Tokens that are a feature's macro used as a value in code.
    pub value_uses: Vec<usize>,
    /// Functions defined only where a conjunction of selected features holds: (the first
    /// token of the definition, the token of its name, the features, sorted).
    pub feature_functions: Vec<(usize, usize, Vec<String>)>,
    /// Definitions of a feature's macro under conditions on other macros only (directive
    /// indices): the simulator cannot follow them, and its build stops where one applies.
    pub guarded_definitions: Vec<usize>,
}

impl Scanned {
    /// Groups that became run-time decisions.
    pub fn decisions(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| !matches!(g.plan, Plan::Constant))
            .count()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Extern,
    Function,
    Block,
    Switch,
    Aggregate,
    Initializer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    scope: Scope,
    open: usize,
    outer_start: usize,
    outer_parens: usize,
    outer_brackets: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    frames: Vec<Frame>,
    parens: usize,
    brackets: usize,
    stmt_start: usize,
    in_progress: bool,
    last: Option<usize>,
}

impl State {
    fn scope(&self) -> Option<Scope> {
        self.frames.last().map(|f| f.scope)
    }
    fn in_code(&self) -> bool {
        matches!(
            self.scope(),
            Some(Scope::Function | Scope::Block | Scope::Switch)
        )
    }
    fn at_file_scope(&self) -> bool {
        matches!(self.scope(), None | Some(Scope::Extern))
    }
    /// Whether another state is at the same place of the structure (a branch ends where its
    /// group started).
    fn same_place(&self, other: &State) -> bool {
        let scopes = |s: &State| s.frames.iter().map(|f| f.scope).collect::<Vec<_>>();
        scopes(self) == scopes(other)
            && self.parens == other.parens
            && self.in_progress == other.in_progress
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Independent,
    Refused,
    Constant,
    Decision,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Code,
    File,
}

struct Group {
    directives: Vec<usize>,
    conditions: Vec<Option<Condition>>,
    kind: Kind,
    features: Vec<String>,
}

/// A group being walked.
struct Open {
    group: usize,
    start: State,
    first_end: Option<State>,
    branch: usize,
    /// Some(context) for a decision group that passed its opening checks.
    context: Option<Context>,
    dead: bool,
    taken: bool,
    /// File context: per branch, function definitions (name, name token, header range) and
    /// other declared names.
    functions: Vec<Definition>,
    declared: Vec<(usize, String)>,
    /// Code context: declarations at the group's own level.
    locals: Vec<Local>,
}

/// A function defined in a branch of a file-scope decision group.
struct Definition {
    branch: usize,
    name: String,
    name_token: usize,
    /// Its header: from its first token to its `{`.
    header: (usize, usize),
}

/// A label or a goto, with the effective conditions of the decision branches around it.
struct Jump {
    name: String,
    line: usize,
    conditions: Vec<(Vec<String>, Vec<bool>)>,
    features: Vec<String>,
}

/// A statement group's declarations, whose later uses are checked once the walk is done.
struct LocalCheck {
    /// The group's plan in `Scanned::groups`.
    plan: usize,
    locals: Vec<Local>,
    branches: usize,
    has_else: bool,
    /// The first token after the group.
    after: usize,
    features: Vec<String>,
}

struct Walker<'a> {
    tokens: &'a [Token],
    lexed: &'a Lexed,
    features: &'a [Feature],
    groups: Vec<Group>,
    /// Directive index → (group, position among its directives).
    membership: BTreeMap<usize, (usize, usize)>,
    state: State,
    open: Vec<Open>,
    out: Scanned,
    local_checks: Vec<LocalCheck>,
    labels: Vec<Jump>,
    gotos: Vec<Jump>,
    next_token: usize,
}

pub fn scan(lexed: &Lexed, features: &[Feature]) -> Scanned {
    let (groups, membership) = groups(lexed, features);
    let mut walker = Walker {
        tokens: &lexed.tokens,
        lexed,
        features,
        groups,
        membership,
        state: State {
            frames: Vec::new(),
            parens: 0,
            brackets: 0,
            stmt_start: 0,
            in_progress: false,
            last: None,
        },
        open: Vec::new(),
        out: Scanned::default(),
        local_checks: Vec::new(),
        labels: Vec::new(),
        gotos: Vec::new(),
        next_token: 0,
    };
    walker.walk();
    walker.check_locals();
    walker.check_labels();
    walker.out.refusals.sort();
    walker.out.refusals.dedup();
    walker.out
}

/// Matches `#if`… `#endif` groups and reads their conditions.
fn groups(lexed: &Lexed, features: &[Feature]) -> (Vec<Group>, BTreeMap<usize, (usize, usize)>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut membership = BTreeMap::new();
    let mut stack: Vec<usize> = Vec::new();
    for (i, d) in lexed.directives.iter().enumerate() {
        match d.name.as_str() {
            "if" | "ifdef" | "ifndef" => {
                stack.push(groups.len());
                membership.insert(i, (groups.len(), 0));
                groups.push(Group {
                    directives: vec![i],
                    conditions: vec![Some(condition::read(&d.name, &d.body, features))],
                    kind: Kind::Independent,
                    features: Vec::new(),
                });
            }
            "elif" | "else" | "endif" => {
                let Some(&g) = stack.last() else { continue };
                let group = &mut groups[g];
                membership.insert(i, (g, group.directives.len()));
                group.directives.push(i);
                match d.name.as_str() {
                    "elif" => group
                        .conditions
                        .push(Some(condition::read("if", &d.body, features))),
                    "else" => group.conditions.push(None),
                    _ => {
                        stack.pop();
                    }
                }
            }
            _ => {}
        }
    }
    for group in &mut groups {
        let conditions: Vec<&Condition> = group.conditions.iter().flatten().collect();
        let mut features: Vec<String> = conditions
            .iter()
            .flat_map(|c| c.features().iter().cloned())
            .collect();
        features.sort();
        features.dedup();
        let independent = conditions
            .iter()
            .filter(|c| matches!(c, Condition::Independent))
            .count();
        let mixed = conditions
            .iter()
            .any(|c| matches!(c, Condition::Mixed { .. }));
        let constant = conditions
            .iter()
            .all(|c| matches!(c, Condition::Constant(_)));
        group.kind = if independent == conditions.len() {
            Kind::Independent
        } else if mixed || independent > 0 || !group_is_closed(group, lexed) {
            Kind::Refused
        } else if constant {
            Kind::Constant
        } else {
            Kind::Decision
        };
        group.features = features;
    }
    (groups, membership)
}

fn group_is_closed(group: &Group, lexed: &Lexed) -> bool {
    group
        .directives
        .last()
        .is_some_and(|&d| lexed.directives[d].name == "endif")
}

const DECLARATION_STARTS: [&str; 24] = [
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool",
    "bool", "struct", "union", "enum", "const", "volatile", "static", "register", "auto", "extern",
    "typedef", "size_t", "inline", "restrict",
];

impl Walker<'_> {
    fn walk(&mut self) {
        let directives = &self.lexed.directives;
        let mut d = 0;
        while d < directives.len() || self.next_token < self.tokens.len() {
            let directive_first = match (directives.get(d), self.tokens.get(self.next_token)) {
                (Some(dir), Some(tok)) => dir.first_line < tok.line,
                (Some(_), None) => true,
                _ => false,
            };
            if directive_first {
                self.directive(d);
                d += 1;
            } else {
                self.token(self.next_token);
                self.next_token += 1;
            }
        }
    }

    /// After a jump back to a saved state: a statement that had not started starts at the
    /// next token, not at one of another branch.
    fn resume_statement(&mut self) {
        if !self.state.in_progress {
            self.state.stmt_start = self.next_token;
        }
    }

    fn dead(&self) -> bool {
        self.open.iter().any(|o| o.dead)
    }

    /// The features of the live decision groups around the current position.
    fn deciding_features(&self) -> Vec<String> {
        self.open
            .iter()
            .filter(|o| o.context.is_some())
            .flat_map(|o| self.groups[o.group].features.iter().cloned())
            .collect()
    }

    fn refuse(&mut self, line: usize, pattern: Pattern, features: &[String]) {
        for f in features {
            self.out.refusals.push((line, pattern, f.clone()));
        }
    }

    fn directive(&mut self, d: usize) {
        let dir = &self.lexed.directives[d];
        let line = dir.first_line;
        match dir.name.as_str() {
            "if" | "ifdef" | "ifndef" => self.open_group(d),
            "elif" | "else" if self.membership.contains_key(&d) => {
                self.end_branch(line);
                let o = self.open.last_mut().expect("an open group");
                o.branch += 1;
                self.state = o.start.clone();
                self.resume_statement();
                self.set_branch_liveness();
            }
            "endif" if self.membership.contains_key(&d) && !self.open.is_empty() => {
                self.end_branch(line);
                self.close_group();
            }
            "define" | "undef" => {
                if self.dead() {
                    return;
                }
                let body = crate::lex::lex(&dir.body);
                let name = body
                    .tokens
                    .first()
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                let deciding = self.deciding_features();
                if self.features.iter().any(|f| f.macro_name == name) {
                    if deciding.is_empty() && !self.open.is_empty() {
                        // Under conditions on other macros only: those are the same in the
                        // simulator's build as in the real ones, so the simulator's build
                        // fails exactly where the definition would take effect.
                        self.out.guarded_definitions.push(d);
                    } else {
                        self.refuse(line, Pattern::ConditionalMacro, std::slice::from_ref(&name));
                    }
                }
                let used: Vec<String> = body.tokens[1.min(body.tokens.len())..]
                    .iter()
                    .filter(|t| self.features.iter().any(|f| f.macro_name == t.text))
                    .map(|t| t.text.clone())
                    .collect();
                self.refuse(line, Pattern::MacroDefinitionUse, &used);
                self.refuse(line, Pattern::ConditionalMacro, &deciding);
            }
            _ => {}
        }
    }

    fn open_group(&mut self, d: usize) {
        let Some(&(g, _)) = self.membership.get(&d) else {
            return;
        };
        let line = self.lexed.directives[d].first_line;
        let kind = self.groups[g].kind;
        let features = self.groups[g].features.clone();
        let dead = self.dead();
        let mut context = None;
        if !dead {
            match kind {
                Kind::Refused => self.refuse(line, Pattern::MixedCondition, &features),
                Kind::Decision => match self.opening_problem() {
                    Some(pattern) => self.refuse(line, pattern, &features),
                    None if self.state.in_code() => context = Some(Context::Code),
                    None => context = Some(Context::File),
                },
                _ => {}
            }
        }
        self.open.push(Open {
            group: g,
            start: self.state.clone(),
            first_end: None,
            branch: 0,
            context,
            dead: false,
            taken: false,
            functions: Vec::new(),
            declared: Vec::new(),
            locals: Vec::new(),
        });
        self.set_branch_liveness();
    }

    /// Dead: a branch no variant compiles (its condition constant false, or an earlier
    /// branch's constant true).
    fn set_branch_liveness(&mut self) {
        let o = self.open.last_mut().expect("an open group");
        let group = &self.groups[o.group];
        if matches!(group.kind, Kind::Constant | Kind::Decision) {
            let condition = &group.conditions[o.branch];
            o.dead = o.taken || matches!(condition, Some(Condition::Constant(false)));
            if matches!(condition, Some(Condition::Constant(true)) | None) {
                o.taken = true;
            }
        }
    }

    /// Why a decision group cannot start here, if it cannot.
    fn opening_problem(&self) -> Option<Pattern> {
        let s = &self.state;
        let last = s.last.map(|i| self.tokens[i].text.as_str());
        if s.parens > 0 {
            return Some(Pattern::PartOfExpression);
        }
        match s.scope() {
            Some(Scope::Initializer) => Some(Pattern::PartOfInitializer),
            Some(Scope::Aggregate) => Some(Pattern::StructField),
            _ if s.in_progress && s.in_code() && matches!(last, Some(")" | "else" | "do")) => {
                Some(Pattern::UnbracedBody)
            }
            _ if s.in_progress => Some(Pattern::PartOfExpression),
            _ => None,
        }
    }

    fn end_branch(&mut self, line: usize) {
        let state = self.state.clone();
        let o = self.open.last_mut().expect("an open group");
        if o.branch == 0 {
            o.first_end = Some(state.clone());
        }
        if o.context.is_some() && !o.dead && !state.same_place(&o.start) {
            let features = self.groups[o.group].features.clone();
            o.context = None;
            self.refuse(line, Pattern::Unbalanced, &features);
        }
    }

    fn close_group(&mut self) {
        let o = self.open.pop().expect("an open group");
        self.state = o.first_end.clone().unwrap_or_else(|| self.state.clone());
        self.resume_statement();
        let group = &self.groups[o.group];
        let plan = match (group.kind, o.context) {
            (Kind::Constant, _) if !o.dead || self.dead() => Some(Plan::Constant),
            (Kind::Decision, Some(Context::Code)) => Some(Plan::Statements),
            (Kind::Decision, Some(Context::File)) => self.definitions(&o),
            _ => None,
        };
        if let Some(plan) = plan {
            let group = &self.groups[o.group];
            let statements = matches!(plan, Plan::Statements);
            self.out.groups.push(GroupPlan {
                directives: group.directives.clone(),
                conditions: group.conditions.clone(),
                plan,
                lift: None,
            });
            if statements && !o.locals.is_empty() {
                self.local_checks.push(LocalCheck {
                    plan: self.out.groups.len() - 1,
                    locals: o.locals,
                    branches: group.conditions.len(),
                    has_else: group.conditions.last().is_some_and(Option::is_none),
                    after: self.next_token,
                    features: group.features.clone(),
                });
            }
        }
    }

    /// The dispatch of a file-scope group: functions in several branches are dispatched;
    /// other names declared in several branches are refused.
    fn definitions(&mut self, o: &Open) -> Option<Plan> {
        let features = self.groups[o.group].features.clone();
        let line = self.lexed.directives[self.groups[o.group].directives[0]].first_line;
        let mut by_name: BTreeMap<&str, Vec<&Definition>> = BTreeMap::new();
        for f in &o.functions {
            by_name.entry(f.name.as_str()).or_default().push(f);
        }
        let mut declared: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (branch, name) in &o.declared {
            declared.entry(name.as_str()).or_default().push(*branch);
        }
        let twice = declared.values().any(|b| b.iter().any(|x| *x != b[0]));
        if twice {
            self.refuse(line, Pattern::DeclaredInTwoBranches, &features);
            return None;
        }
        let mut dispatches = Vec::new();
        for (name, defs) in by_name {
            if defs.len() < 2 {
                continue;
            }
            let header = defs[0].header;
            let Some((arguments, returns_void)) = signature(&self.tokens[header.0..header.1], name)
            else {
                self.refuse(line, Pattern::FunctionSignature, &features);
                return None;
            };
            dispatches.push(Dispatch {
                name: name.to_string(),
                variants: defs.iter().map(|d| (d.branch, d.name_token)).collect(),
                header,
                arguments,
                returns_void,
            });
        }
        Some(Plan::Definitions(dispatches))
    }

    fn token(&mut self, i: usize) {
        let t = &self.tokens[i];
        let text = t.text.as_str();
        if t.kind == TokenKind::Ident && !self.dead() {
            self.check_value_use(i);
        }
        let target = self
            .tokens
            .get(i + 1)
            .filter(|n| n.kind == TokenKind::Ident);
        if let Some(target) = target.filter(|_| t.text == "goto" && !self.dead()) {
            let conditions = self.enclosing_conditions();
            let name = target.text.clone();
            self.gotos.push(Jump {
                name,
                line: t.line,
                conditions,
                features: Vec::new(),
            });
        }
        let s = &mut self.state;
        match text {
            "{" => {
                let scope = self.scope_opened_by(i);
                let s = &mut self.state;
                s.frames.push(Frame {
                    scope,
                    open: i,
                    outer_start: s.stmt_start,
                    outer_parens: s.parens,
                    outer_brackets: s.brackets,
                });
                s.parens = 0;
                s.brackets = 0;
                s.in_progress = false;
                s.stmt_start = i + 1;
            }
            "}" => {
                if let Some(f) = s.frames.pop() {
                    s.parens = f.outer_parens;
                    s.brackets = f.outer_brackets;
                    if matches!(f.scope, Scope::Aggregate | Scope::Initializer) {
                        s.in_progress = true;
                        s.stmt_start = f.outer_start;
                    } else {
                        s.in_progress = false;
                        s.stmt_start = i + 1;
                        if f.scope == Scope::Function {
                            self.definition_ended(f.outer_start, f.open);
                        }
                    }
                }
            }
            "(" | "[" => {
                s.parens += 1;
                s.brackets += usize::from(text == "[");
                s.in_progress = true;
            }
            ")" | "]" => {
                s.parens = s.parens.saturating_sub(1);
                if text == "]" {
                    s.brackets = s.brackets.saturating_sub(1);
                }
            }
            ";" if s.parens == 0 => {
                let start = s.stmt_start;
                s.in_progress = false;
                s.stmt_start = i + 1;
                self.statement_ended(start, i);
            }
            ":" if s.parens == 0 && s.in_code() && is_label(self.tokens, s.stmt_start, i) => {
                let start = s.stmt_start;
                s.in_progress = false;
                s.stmt_start = i + 1;
                self.label(start, i);
            }
            _ => s.in_progress = true,
        }
        self.state.last = Some(i);
    }

    fn scope_opened_by(&self, i: usize) -> Scope {
        let s = &self.state;
        let last = s.last.map(|j| &self.tokens[j]);
        let last_text = last.map(|t| t.text.as_str());
        let statement = &self.tokens[s.stmt_start.min(i)..i];
        let has = |word: &str| statement.iter().any(|t| t.text == word);
        if s.scope() == Some(Scope::Initializer) || last_text == Some("=") || s.parens > 0 {
            Scope::Initializer
        } else if last_text == Some(")") {
            if s.at_file_scope() {
                Scope::Function
            } else if statement.first().is_some_and(|t| t.text == "switch") {
                Scope::Switch
            } else {
                Scope::Block
            }
        } else if has("struct") || has("union") || has("enum") {
            Scope::Aggregate
        } else if s.in_code() {
            Scope::Block
        } else if statement.first().is_some_and(|t| t.text == "extern")
            && last.is_some_and(|t| t.kind == TokenKind::Literal)
        {
            Scope::Extern
        } else {
            Scope::Aggregate
        }
    }

    /// A label inside a decision branch could be reached from outside it; a `case` only
    /// when its switch is outside the branch.
    fn label(&mut self, start: usize, colon: usize) {
        if self.dead() {
            return;
        }
        let is_case = matches!(self.tokens[start].text.as_str(), "case" | "default");
        if !is_case {
            // A goto target: fine when every goto to it runs only where it exists (checked
            // once every goto is known).
            let conditions = self.enclosing_conditions();
            if !conditions.is_empty() {
                let features = self.deciding_features();
                let name = self.tokens[start].text.clone();
                let line = self.tokens[colon].line;
                self.labels.push(Jump {
                    name,
                    line,
                    conditions,
                    features,
                });
            }
            return;
        }
        let switch_depth = self
            .state
            .frames
            .iter()
            .rposition(|f| f.scope == Scope::Switch);
        let line = self.tokens[colon].line;
        let mut refused = Vec::new();
        for o in self
            .open
            .iter()
            .filter(|o| o.context == Some(Context::Code))
        {
            let outside = switch_depth.is_none_or(|d| d < o.start.frames.len());
            if !is_case || outside {
                refused.extend(self.groups[o.group].features.iter().cloned());
            }
        }
        self.refuse(line, Pattern::ConditionalLabel, &refused);
    }

    /// Records declarations made at a decision branch's own level.
    fn statement_ended(&mut self, start: usize, end: usize) {
        if self.dead() || start >= end {
            return;
        }
        let depth = self.state.frames.len();
        let Some(o) = self.open.last_mut() else {
            return;
        };
        if o.context.is_none() || o.start.frames.len() != depth {
            return;
        }
        let statement = &self.tokens[start..end];
        let names = declared_names(statement);
        match o.context {
            Some(Context::Code) if !names.is_empty() => {
                let branch = o.branch;
                o.locals.push(Local {
                    branch,
                    start,
                    end,
                    names,
                });
            }
            Some(Context::File) => {
                o.declared.extend(names.into_iter().map(|n| (o.branch, n)));
            }
            _ => {}
        }
    }

    fn definition_ended(&mut self, start: usize, brace: usize) {
        if self.dead() {
            return;
        }
        let depth = self.state.frames.len();
        let Some(o) = self.open.last() else {
            return;
        };
        if o.context != Some(Context::File) || o.start.frames.len() != depth {
            return;
        }
        if let Some(name_token) = function_name(self.tokens, start, brace) {
            if let Some(features) = self.required_features() {
                self.out
                    .feature_functions
                    .push((start, name_token, features));
            }
            let Some(o) = self.open.last_mut() else {
                return;
            };
            let name = self.tokens[name_token].text.clone();
            let header = (start, brace);
            let branch = o.branch;
            o.functions.push(Definition {
                branch,
                name,
                name_token,
                header,
            });
        }
    }

    /// The effective condition of each statement-level decision branch around the current
    /// position: the branch's condition and no earlier branch's, over its group's features.
    fn enclosing_conditions(&self) -> Vec<(Vec<String>, Vec<bool>)> {
        self.open
            .iter()
            .filter(|o| o.context == Some(Context::Code))
            .map(|o| effective_condition(&self.groups[o.group], o.branch))
            .collect()
    }

    /// A label under decisions is refused unless every goto to it runs only under at least
    /// the same decisions (lz4's fast decoding loop jumps between its own blocks).
    fn check_labels(&mut self) {
        for label in std::mem::take(&mut self.labels) {
            let reached_elsewhere = self.gotos.iter().any(|g| {
                g.name == label.name && !label.conditions.iter().all(|c| g.conditions.contains(c))
            });
            if reached_elsewhere {
                self.refuse(label.line, Pattern::ConditionalLabel, &label.features);
            }
        }
    }

    /// The features every enclosing decision branch requires selected, when each is a
    /// conjunction of selected features.
    fn required_features(&self) -> Option<Vec<String>> {
        let mut required = Vec::new();
        for o in self.open.iter().filter(|o| o.context.is_some()) {
            match &self.groups[o.group].conditions[o.branch] {
                Some(Condition::Decision { features, table }) => {
                    required.extend(condition::conjunction(features, table)?);
                }
                _ => return None,
            }
        }
        required.sort();
        required.dedup();
        (!required.is_empty()).then_some(required)
    }

    fn check_value_use(&mut self, i: usize) {
        let t = &self.tokens[i];
        if !self.features.iter().any(|f| f.macro_name == t.text) {
            return;
        }
        let s = &self.state;
        let first = self.tokens.get(s.stmt_start).map(|t| t.text.as_str());
        let constant = !s.in_code() || s.brackets > 0 || matches!(first, Some("static" | "case"));
        if constant {
            let feature = [t.text.clone()];
            self.refuse(t.line, Pattern::ConstantExpression, &feature);
        } else {
            self.out.value_uses.push(i);
        }
    }

    /// Declarations the code after their group uses are lifted out of it, or refused.
    fn check_locals(&mut self) {
        for check in std::mem::take(&mut self.local_checks) {
            let declared: BTreeSet<&str> = check
                .locals
                .iter()
                .flat_map(|l| l.names.iter().map(String::as_str))
                .collect();
            let mut used_after = BTreeSet::new();
            let mut depth = 0i64;
            for t in &self.tokens[check.after.min(self.tokens.len())..] {
                match t.text.as_str() {
                    "{" => depth += 1,
                    "}" => depth -= 1,
                    _ => {}
                }
                if depth < 0 {
                    break;
                }
                if declared.contains(t.text.as_str()) {
                    used_after.insert(t.text.clone());
                }
            }
            if used_after.is_empty() {
                continue;
            }
            let tokens = self.tokens;
            match lift::lift(
                tokens,
                &check.locals,
                check.branches,
                check.has_else,
                &used_after,
            ) {
                Some(lift) => self.out.groups[check.plan].lift = Some(lift),
                None => {
                    for local in &check.locals {
                        if local.names.iter().any(|n| used_after.contains(n)) {
                            let line = tokens[local.start].line;
                            self.refuse(line, Pattern::DeclarationUsedAfter, &check.features);
                        }
                    }
                }
            }
        }
    }
}

/// Branch `branch` of `group` as a truth table over the group's features: its own condition
/// holds and no earlier branch's does (`#else` is every earlier one failing).
fn effective_condition(group: &Group, branch: usize) -> (Vec<String>, Vec<bool>) {
    let features = group.features.clone();
    let holds = |condition: &Option<Condition>, mask: usize| match condition {
        None => true,
        Some(Condition::Constant(v)) => *v,
        Some(Condition::Decision {
            features: own,
            table,
        }) => {
            let own_mask = own.iter().enumerate().fold(0, |m, (k, f)| {
                let i = features
                    .iter()
                    .position(|g| g == f)
                    .expect("a group feature");
                m | (usize::from(mask & (1 << i) != 0) << k)
            });
            table[own_mask]
        }
        Some(_) => false,
    };
    let table = (0..1usize << features.len())
        .map(|mask| {
            holds(&group.conditions[branch], mask)
                && (0..branch).all(|j| !holds(&group.conditions[j], mask))
        })
        .collect();
    (features, table)
}

fn is_label(tokens: &[Token], start: usize, colon: usize) -> bool {
    let statement = &tokens[start.min(colon)..colon];
    match statement.first().map(|t| t.text.as_str()) {
        Some("case") => true,
        Some("default") => statement.len() == 1,
        _ => statement.len() == 1 && statement[0].kind == TokenKind::Ident,
    }
}

/// The names a statement declares, if it is a declaration (not a prototype): identifiers
/// before `=`, `,`, `;` or `[` outside parentheses and initializers. A statement is taken
/// as a declaration when it starts with a type word or with `Type name` / `Type *name`.
fn declared_names(statement: &[Token]) -> Vec<String> {
    let first = statement[0].text.as_str();
    const STATEMENTS: [&str; 12] = [
        "goto", "return", "break", "continue", "if", "else", "while", "for", "do", "switch",
        "case", "default",
    ];
    if STATEMENTS.contains(&first) {
        return Vec::new();
    }
    let typed = |k: usize| statement.get(k).is_some_and(|t| t.kind == TokenKind::Ident);
    let looks_declared = DECLARATION_STARTS.contains(&first)
        || (statement[0].kind == TokenKind::Ident
            && (typed(1) || (statement.get(1).is_some_and(|t| t.text == "*") && typed(2))));
    if !looks_declared {
        return Vec::new();
    }
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut in_initializer = false;
    // The statement's tokens, then a `;` that closes the last declarator.
    let n = statement.len();
    let text = |k: usize| statement.get(k).map_or(";", |t| t.text.as_str());
    let ident = |k: usize| statement.get(k).is_some_and(|t| t.kind == TokenKind::Ident);
    for k in 0..=n {
        match text(k) {
            t @ ("(" | "[" | "{") => {
                // A name before a parameter list at the top is a prototype, not an object.
                if t == "("
                    && depth == 0
                    && !in_initializer
                    && k > 0
                    && ident(k - 1)
                    && k < n
                    && text(k + 1) != "*"
                {
                    return Vec::new();
                }
                if t == "[" && depth == 0 && !in_initializer && k > 0 && ident(k - 1) {
                    names.push(text(k - 1).to_string());
                }
                depth += 1;
            }
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            t @ ("=" | "," | ";") if depth == 0 => {
                if !in_initializer && k > 0 && ident(k - 1) {
                    names.push(text(k - 1).to_string());
                }
                in_initializer = t == "=";
            }
            _ => {}
        }
    }
    // `struct tag { … }` declares its tag too.
    for k in 0..n.saturating_sub(1) {
        if matches!(text(k), "struct" | "union" | "enum") && text(k + 2) == "{" {
            names.push(format!("{} {}", text(k), text(k + 1)));
        }
    }
    names
}

/// The token naming the function a definition's header (`start..brace`) defines: the
/// identifier before the first parameter list at depth 0.
fn function_name(tokens: &[Token], start: usize, brace: usize) -> Option<usize> {
    (start + 1..brace)
        .find(|&k| {
            tokens[k].text == "("
                && tokens[k - 1].kind == TokenKind::Ident
                && !tokens[k - 1].text.starts_with("__attribute")
                && !tokens[k - 1].text.starts_with("__declspec")
        })
        .map(|k| k - 1)
}

/// A definition's parameter names and whether it returns void, or None when its variants
/// cannot be dispatched by a plain call.
fn signature(header: &[Token], name: &str) -> Option<(Vec<String>, bool)> {
    let at = header.iter().position(|t| t.text == name)?;
    if header.get(at + 1)?.text != "(" {
        return None;
    }
    let mut depth = 0usize;
    let mut params: Vec<Vec<&Token>> = vec![Vec::new()];
    let mut close = None;
    for (k, t) in header.iter().enumerate().skip(at + 1) {
        match t.text.as_str() {
            "(" => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ")" => {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            "," if depth == 1 => {
                params.push(Vec::new());
                continue;
            }
            _ => {}
        }
        params.last_mut()?.push(t);
    }
    close?;
    let mut arguments = Vec::new();
    let only_void = params.len() == 1 && params[0].len() == 1 && params[0][0].text == "void";
    if !(only_void || params.len() == 1 && params[0].is_empty()) {
        for p in &params {
            let plain = p.iter().all(|t| t.text != "(" && t.text != "...");
            let name = p.iter().take_while(|t| t.text != "[").last()?;
            if !plain || p.len() < 2 || name.kind != TokenKind::Ident {
                return None;
            }
            arguments.push(name.text.clone());
        }
    }
    let before = &header[..at];
    let returns_void =
        before.iter().any(|t| t.text == "void") && !before.iter().any(|t| t.text == "*");
    Some((arguments, returns_void))
}
