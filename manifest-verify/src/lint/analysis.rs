//! The check itself: from each tool, a breadth-first walk of the call graph; every catalogued
//! use the tool's policy does not grant is a finding, explained by the shortest call path.

use std::collections::{HashMap, HashSet, VecDeque};

use policy_runtime::capability::{beyond_declaration, violation_message, Effect, Grants};
use policy_runtime::ToolPolicy;

use super::body::{sites, Site, SiteKind};
use super::program::{NodeId, Program};
use super::{Finding, Step};

/// Findings for every tool of the member crates; `policy_of` may replace a tool's policy (from
/// a manifest).
pub(crate) fn check(
    program: &Program,
    policy_of: &dyn Fn(&str) -> Option<ToolPolicy>,
    trusted: &[String],
) -> (usize, Vec<Finding>) {
    let is_trusted = |node: NodeId| {
        let unit = program.modules[program.nodes[node].module].unit;
        trusted.contains(&program.units[unit].name)
    };
    let mut cache: HashMap<NodeId, Vec<Site>> = HashMap::new();
    let mut findings = Vec::new();
    let mut tools = 0;
    for (id, node) in program.nodes.iter().enumerate() {
        let Some(decl) = &node.tool else { continue };
        if !program.units[program.modules[node.module].unit].member {
            continue;
        }
        tools += 1;
        let policy = policy_of(&decl.name).unwrap_or_else(|| decl.policy.clone());
        let grants = Grants::from_policy(&policy);
        let mut parent: HashMap<NodeId, (NodeId, usize)> = HashMap::new();
        let mut seen = HashSet::from([id]);
        let mut queue = VecDeque::from([id]);
        while let Some(current) = queue.pop_front() {
            let current_sites = cache
                .entry(current)
                .or_insert_with(|| sites(program, current))
                .clone();
            for s in &current_sites {
                match &s.kind {
                    SiteKind::Uses {
                        call,
                        effect,
                        literal,
                    } => {
                        let message = if !grants.allows_effect(*effect) {
                            violation_message(call, *effect, Some(&decl.name), &policy)
                        } else {
                            let outside = beyond_declaration(
                                call,
                                *effect,
                                literal.as_deref(),
                                Some(&decl.name),
                                &policy,
                            );
                            match outside {
                                Some(m) => m,
                                None => continue,
                            }
                        };
                        let steps = path_to(program, &parent, current, s.line);
                        findings.push(finding(
                            program, &decl.name, current, s, call, *effect, message, steps,
                        ));
                    }
                    SiteKind::Calls(targets) => {
                        for t in targets {
                            if !is_trusted(*t) && seen.insert(*t) {
                                parent.insert(*t, (current, s.line));
                                queue.push_back(*t);
                            }
                        }
                    }
                }
            }
        }
    }
    (tools, findings)
}

/// The chain of nodes from the tool to `node`, each with the line where it makes the next call.
fn path_to(
    program: &Program,
    parent: &HashMap<NodeId, (NodeId, usize)>,
    node: NodeId,
    line: usize,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let (mut current, mut at) = (node, line);
    loop {
        let n = &program.nodes[current];
        steps.push(Step {
            function: n.display.clone(),
            file: program.files[n.file].display.clone(),
            line: at,
        });
        match parent.get(&current) {
            Some(&(p, l)) => {
                current = p;
                at = l;
            }
            None => break,
        }
    }
    steps.reverse();
    steps
}

#[allow(clippy::too_many_arguments)]
fn finding(
    program: &Program,
    tool: &str,
    node: NodeId,
    site: &Site,
    call: &str,
    effect: Effect,
    mut message: String,
    call_path: Vec<Step>,
) -> Finding {
    if call_path.len() > 1 {
        let chain: Vec<String> = call_path
            .iter()
            .map(|s| format!("`{}`", s.function))
            .collect();
        message.push_str(&format!(" (reached through {})", chain.join(" → ")));
    }
    let n = &program.nodes[node];
    Finding {
        code: match effect {
            Effect::Uses(c) => format!("lint.{}", c.key()),
            Effect::Unanalysable => "lint.unanalysable".into(),
        },
        tool: tool.to_string(),
        capability: match effect {
            Effect::Uses(c) => Some(c),
            Effect::Unanalysable => None,
        },
        call: call.to_string(),
        message,
        file: program.files[n.file].display.clone(),
        line: site.line,
        column: site.column,
        len: site.len,
        call_path,
    }
}
