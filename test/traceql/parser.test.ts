/** TraceQL lexer/parser/planner: precedence, literals, positions of errors and the pushdown plan. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TraceQLParseError, compileTraceQL, parseTraceQL } from '../../plugins/query-traceql/index.js';
import type { FieldExpr, SpansetExpr } from '../../plugins/query-traceql/index.js';

const first = (q: string) => parseTraceQL(q).pipeline.stages[0] as SpansetExpr;
const fieldOf = (q: string) => {
  const f = first(q);
  if (f.kind !== 'filter' || !f.expr) throw new Error('not a filter');
  return f.expr;
};
const shape = (e: FieldExpr | SpansetExpr): unknown => {
  switch (e.kind) {
    case 'binary':
      return [e.op, shape(e.lhs), shape(e.rhs)];
    case 'spansetOp':
      return [e.op, shape(e.lhs), shape(e.rhs)];
    case 'unary':
      return [e.op, shape(e.expr)];
    case 'attribute':
      return `${e.scope}:${e.name}`;
    case 'intrinsic':
      return e.name;
    case 'static':
      return e.type === 'nil' ? 'nil' : e.value;
    case 'filter':
      return e.expr ? shape(e.expr) : '{}';
    default:
      return e.kind;
  }
};

test('field precedence: || < && < comparison < + < * < ^', () => {
  assert.equal(shape(fieldOf('{ .a = 1 || .b = 2 && .c = 3 }')), ['||', ['=', 'unscoped:a', 1], ['&&', ['=', 'unscoped:b', 2], ['=', 'unscoped:c', 3]]]);
  assert.equal(shape(fieldOf('{ span.x + 2 * 3 ^ 2 > 10 }')), ['>', ['+', 'span:x', ['*', 2, ['^', 3, 2]]], 10]);
  assert.equal(shape(fieldOf('{ !(status = error) }')), ['!', ['=', 'status', 'error']]);
  assert.equal(shape(fieldOf('{ span.x > -3 }')), ['>', 'span:x', -3]);
});

test('spanset precedence: || < && < structural, left associative', () => {
  assert.equal(shape(first('{ .a } > { .b } && { .c } || { .d }')), ['||', ['&&', ['>', 'unscoped:a', 'unscoped:b'], 'unscoped:c'], 'unscoped:d']);
  assert.equal(shape(first('{ } >> { } !~ { }')), ['!~', ['>>', '{}', '{}'], '{}']);
  assert.equal(shape(first('({ .a } | count() > 1) && { .b }')), ['&&', 'pipeline', 'unscoped:b']);
});

test('literals and names: durations, quoted attributes, intrinsics with scopes, enums', () => {
  assert.equal(shape(fieldOf('{ duration > 1h30m }')), ['>', 'duration', 5400e9]);
  assert.equal(shape(fieldOf('{ duration >= 1.5ms }')), ['>=', 'duration', 1.5e6]);
  assert.equal(shape(fieldOf('{ span."with space" = `raw\\n` }')), ['=', 'span:with space', 'raw\\n']);
  assert.equal(shape(fieldOf('{ resource.k8s.pod-name = "a\\"b" }')), ['=', 'resource:k8s.pod-name', 'a"b']);
  assert.equal(shape(fieldOf('{ span:kind = server && trace:rootService = "x" }')), ['&&', ['=', 'kind', 'server'], ['=', 'rootServiceName', 'x']]);
  assert.equal(shape(fieldOf('{ .x = nil || .y = 1.5e3 || .z = true }')), ['||', ['||', ['=', 'unscoped:x', 'nil'], ['=', 'unscoped:y', 1500]], ['=', 'unscoped:z', true]]);
});

test('pipelines: aggregates, select, by, coalesce', () => {
  const p = parseTraceQL('{ } | avg(duration) > 1s | select(span.a, resource.b) | by(resource.service.name) | coalesce() | count() + 1 >= 2').pipeline;
  assert.equal(p.stages.map((s) => s.kind), ['filter', 'scalarFilter', 'select', 'by', 'coalesce', 'scalarFilter']);
});

test('errors carry line and column', () => {
  const cases: [string, number, number, RegExp][] = [
    ['{ .a = }', 1, 8, /unexpected "}"/],
    ['{ .a = 1 }\n  && { .b = }', 2, 13, /unexpected "}"/],
    ['{ .a = 1 } | count()', 1, 21, /unexpected end of query/],
    ['{ .a =~ 5 }', 1, 6, /must be a string/],
    ['{ .a = 1 = 2 }', 1, 10, /cannot be chained/],
    ['{ .a } | foo()', 1, 10, /unexpected identifier "foo"/],
    ['{ span:bogus = 1 }', 1, 3, /unknown intrinsic/],
    ['{ .a = 1 } &> { }', 1, 12, /unexpected character "&"/],
    ['{ .a = "x }', 1, 8, /unterminated string/],
    ['', 1, 1, /unexpected end of query/],
  ];
  for (const [q, line, col, re] of cases) {
    try {
      parseTraceQL(q);
      assert.unreachable(q);
    } catch (e) {
      assert.instance(e, TraceQLParseError, q);
      const err = e as TraceQLParseError;
      assert.equal([err.pos.line, err.pos.col], [line, col], `${q}: ${err.message}`);
      assert.match(err.reason, re, q);
    }
  }
  assert.throws(() => compileTraceQL('{ name =~ "a(" }'), (e: unknown) => e instanceof TraceQLParseError && /invalid regex/.test(e.message));
});

test('planner: pushdown only what every match needs on one span', () => {
  assert.equal(compileTraceQL('{ resource.service.name = "a" && span.x = 1 }').pushdown, { 'service.name': 'a' });
  assert.equal(compileTraceQL('{ name = "GET" } > { resource.service.name = "b" && name = "c" }').pushdown, { 'service.name': 'b', name: 'c' });
  assert.is(compileTraceQL('{ resource.service.name = "a" } || { name = "x" }').pushdown, undefined);
  assert.is(compileTraceQL('{ resource.service.name = "a" || name = "x" }').pushdown, undefined);
  assert.equal(compileTraceQL('{ resource.service.name = "a" } !> { name = "x" }').pushdown, { name: 'x' });
  assert.equal(compileTraceQL('{ name = "x" } | count() > 2').pushdown, { name: 'x' });
  assert.is(compileTraceQL('{ span.tags = "b" }').pushdown, undefined, 'array-valued attributes are not pushed');
});

test.run();
