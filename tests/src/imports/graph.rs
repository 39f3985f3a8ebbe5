//! Strongly connected components of a directed graph (Tarjan's algorithm): the nodes that all
//! reach one another. A component of two or more nodes is a cycle.

/// Tarjan's state for one walk.
struct Tarjan<'a> {
    adjacent: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    components: Vec<Vec<usize>>,
}

/// The components of the graph with `adjacent[n]` the successors of node `n`, each sorted, in
/// the order of their smallest node.
pub fn strongly_connected(adjacent: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adjacent.len();
    let mut t = Tarjan {
        adjacent,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    let mut components = t.components;
    for c in &mut components {
        c.sort_unstable();
    }
    components.sort();
    components
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.adjacent[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// The components with two or more nodes.
pub fn cycles(adjacent: &[Vec<usize>]) -> Vec<Vec<usize>> {
    strongly_connected(adjacent)
        .into_iter()
        .filter(|c| c.len() >= 2)
        .collect()
}
