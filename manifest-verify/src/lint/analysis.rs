//! The check itself: from each tool, a breadth-first walk of the call graph; every catalogued
//! use the tool's policy does not grant is a finding, explained by the shortest call path.

use std::collections::{HashMap, HashSet, VecDeque};

use policy_analysis::lint::capability::Grants;
use policy_analysis::lint::findings::{judge, Location};
use policy_runtime::ToolPolicy;

use policy_analysis::lint::walk::{Site, SiteKind};

use super::body::{position, sites};
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
    let mut cache: HashMap<NodeId, Vec<Site<NodeId>>> = HashMap::new();
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
                let (line, _) = position(s);
                match &s.kind {
                    SiteKind::Uses(used) => {
                        let verdict = judge(&policy, &grants, &decl.name, used);
                        let at = location(program, current, s);
                        if let Some(mut f) = Finding::of(verdict, &decl.name, used, at) {
                            f.call_path = path_to(program, &parent, current, line);
                            explain(&mut f);
                            findings.push(f);
                        }
                    }
                    SiteKind::Calls(targets) => {
                        for t in targets {
                            if !is_trusted(*t) && seen.insert(*t) {
                                parent.insert(*t, (current, line));
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

/// Where a site of `node` is.
fn location(program: &Program, node: NodeId, site: &Site<NodeId>) -> Location {
    let (line, column) = position(site);
    Location {
        file: program.files[program.nodes[node].file].display.clone(),
        line,
        column,
        len: site.len,
    }
}

/// Adds the call path to the message of a finding reached through other functions.
fn explain(f: &mut Finding) {
    if f.call_path.len() > 1 {
        let chain: Vec<String> = f
            .call_path
            .iter()
            .map(|s| format!("`{}`", s.function))
            .collect();
        f.message
            .push_str(&format!(" (reached through {})", chain.join(" → ")));
    }
}
