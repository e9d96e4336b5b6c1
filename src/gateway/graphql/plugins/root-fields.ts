/**
 * An operation's root fields as graphql-js will execute them: fragments spread (each once, when
 * its type condition is the root type), `@skip` and `@include` applied, and the arguments that
 * price or shape an operation coerced against the schema with the request's variables, their
 * defaults included (graphql-js's own `getVariableValues` and `getArgumentValues`). The estimate,
 * the dry run and the request-shape check all read this, so none of them can be told one thing by
 * the text while execution does another: a `dryRun: $d` whose variable defaults to true, a list of
 * representations given as a variable's default inside a fragment, a single representation that
 * input coercion makes a list of one.
 *
 * A hot path: most operations' root fields and those arguments do not depend on their variables at
 * all (`pets(first: $n, after: $after)` does not: a `pets` field is priced by its presence). For
 * those the reading is done once per parsed operation (Apollo Server keeps parsed documents) and
 * kept; only an operation whose variables can change it is read again, once per request.
 */

import {
  type ASTNode,
  BREAK,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLIncludeDirective,
  type GraphQLObjectType,
  type GraphQLSchema,
  GraphQLSkipDirective,
  getArgumentValues,
  getDirectiveValues,
  getVariableValues,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  visit,
} from 'graphql';

type ValueMap = Readonly<Record<string, unknown>>;

/** Root fields whose arguments the gateway reads before execution (the others are priced by name). */
const READ_ARGUMENTS = new Set(['rateLimit', 'pet', '_entities']);

export interface RootField {
  readonly name: string;
  /** The name the response gives it (its alias); fields of one response key are one field. */
  readonly responseKey: string;
  readonly nodes: readonly FieldNode[];
  /**
   * Its arguments as execution will see them, for the fields whose arguments are read (READ_ARGUMENTS);
   * undefined for the others, and for one whose arguments cannot be coerced (execution fails it).
   */
  readonly args: ValueMap | undefined;
}

export interface RootFields {
  readonly fields: readonly RootField[];
  /** The coerced variables the fields were read with (for the selections below them). */
  readonly variables: ValueMap;
  readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  /**
   * No variable can change this reading: it is the same object for every request of the operation,
   * so what is worked out from it may be kept with it (in a WeakMap: one entry per operation, where
   * one per request would cost the garbage collector more than the work saved).
   */
  readonly fixed: boolean;
}

interface OperationFacts {
  readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  /** The reading when no variable can change it, else undefined. */
  readonly fixed: RootFields | undefined;
}

const factsByOperation = new WeakMap<OperationDefinitionNode, OperationFacts>();
/**
 * One reading per request (the estimate, the dry run and the shape check each ask for it), kept on
 * the request object under a symbol: a WeakMap keyed by each request object cost ~20 µs a request
 * in the garbage collector's ephemeron work, more than the reading itself.
 */
const READ = Symbol('root fields read for this request');

interface Kept {
  readonly operation: OperationDefinitionNode;
  readonly read: RootFields;
}

/**
 * The root fields of `operation` for one request (`request` is the key its reading is kept under
 * while the request lives). Undefined when the schema has no root type for the operation.
 */
export function readRootFields(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  document: DocumentNode,
  request: { readonly variables?: ValueMap | undefined },
): RootFields | undefined {
  const rootType = schema.getRootType(operation.operation);
  if (rootType == null) return undefined;
  const facts = factsOf(rootType, operation, document);
  if (facts.fixed !== undefined) return facts.fixed;
  const kept = (request as { [READ]?: Kept })[READ];
  if (kept?.operation === operation) return kept.read;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {}, {
    maxErrors: 1,
  });
  // Variables that cannot be coerced: execution refuses the operation before any field runs, so
  // there is nothing to price, dry-run or check.
  const read =
    'errors' in coerced
      ? { fields: [], variables: {}, fragments: facts.fragments, fixed: false }
      : readWith(rootType, operation, facts.fragments, coerced.coerced, false);
  (request as { [READ]?: Kept })[READ] = { operation, read };
  return read;
}

/**
 * The fields of `selectionSet` on an object type named `typeName`, by response key, as graphql-js
 * collects them: `@skip`/`@include` applied, a fragment spread once and only on its own type.
 */
export function collectFields(
  selectionSet: SelectionSetNode,
  typeName: string,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: ValueMap,
): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  const spread = new Set<string>();
  const visitSet = (set: SelectionSetNode): void => {
    for (const selection of set.selections) {
      if (!included(selection, variables)) continue;
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        const same = fields.get(key);
        if (same) same.push(selection);
        else fields.set(key, [selection]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition?.name.value;
        if (on === undefined || on === typeName) visitSet(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (spread.has(name) || fragment === undefined || fragment.typeCondition.name.value !== typeName) continue;
        spread.add(name);
        visitSet(fragment.selectionSet);
      }
    }
  };
  visitSet(selectionSet);
  return fields;
}

function factsOf(
  rootType: GraphQLObjectType,
  operation: OperationDefinitionNode,
  document: DocumentNode,
): OperationFacts {
  let facts = factsByOperation.get(operation);
  if (facts !== undefined) return facts;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const fixed = dependsOnVariables(operation.selectionSet, rootType.name, fragments)
    ? undefined
    : readWith(rootType, operation, fragments, {}, true);
  facts = { fragments, fixed };
  factsByOperation.set(operation, facts);
  return facts;
}

function readWith(
  rootType: GraphQLObjectType,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: ValueMap,
  fixed: boolean,
): RootFields {
  const fields: RootField[] = [];
  const definitions = rootType.getFields();
  for (const [responseKey, nodes] of collectFields(operation.selectionSet, rootType.name, fragments, variables)) {
    const node = nodes[0] as FieldNode;
    const name = node.name.value;
    const definition = definitions[name];
    let args: Record<string, unknown> | undefined;
    if (definition !== undefined && READ_ARGUMENTS.has(name)) {
      try {
        args = getArgumentValues(definition, node, variables);
      } catch {
        args = undefined; // execution fails this field with the same error, before any upstream request
      }
    }
    fields.push({ name, responseKey, nodes, args });
  }
  return { fields, variables, fragments, fixed };
}

/** `@skip(if:)` and `@include(if:)` as execution reads them (GraphQL spec section 3.13). */
function included(node: { readonly directives?: readonly DirectiveNode[] | undefined }, variables: ValueMap): boolean {
  if (!node.directives?.length) return true;
  if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if !== false;
}

/**
 * Whether a variable can change the reading: one in a directive of a root selection (a root field,
 * or a fragment at the root), or in the arguments of a field whose arguments are read.
 */
function dependsOnVariables(
  selectionSet: SelectionSetNode,
  typeName: string,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): boolean {
  const spread = new Set<string>();
  const check = (set: SelectionSetNode): boolean =>
    set.selections.some((selection) => {
      if (selection.directives?.some((node) => hasVariable(node))) return true;
      if (selection.kind === Kind.FIELD) {
        // A dry run also reads what is asked of rateLimit (its @skip/@include), with the variables.
        if (selection.name.value === 'rateLimit' && selection.selectionSet !== undefined) {
          if (hasVariable(selection.selectionSet, true)) return true;
        }
        return (
          READ_ARGUMENTS.has(selection.name.value) && (selection.arguments ?? []).some((node) => hasVariable(node))
        );
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) return check(selection.selectionSet);
      const fragment = fragments.get(selection.name.value);
      if (fragment === undefined || spread.has(fragment.name.value)) return false;
      spread.add(fragment.name.value);
      return fragment.typeCondition.name.value === typeName && check(fragment.selectionSet);
    });
  return check(selectionSet);
}

/** Whether `node` holds a variable (or, with `orSpread`, a fragment spread, whose variables are elsewhere). */
function hasVariable(node: ASTNode, orSpread = false): boolean {
  let found = false;
  const stop = () => {
    found = true;
    return BREAK;
  };
  visit(node, orSpread ? { Variable: stop, FragmentSpread: stop } : { Variable: stop });
  return found;
}
