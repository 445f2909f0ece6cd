/**
 * The names a module exports, read with the TypeScript compiler API from its source alone (no
 * program): src/index.ts and src/internal.ts name every export by hand, so this is their whole list.
 * Used by test/docs/api-reference.test.ts and test/docs/code-blocks.test.ts.
 */
import ts from 'typescript';

/** Every name a module exports, in source order: `export { a, type B, c as d } from`, `export type { ... }`, `export const ...`. */
export function exportedNames(source: string, fileName = 'index.ts'): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const names: string[] = [];
  const exported = (node: ts.Node) => ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const statement of file.statements) {
    const where = `${fileName}:${file.getLineAndCharacterOfPosition(statement.getStart()).line + 1}`;
    if (ts.isExportDeclaration(statement)) {
      const clause = statement.exportClause;
      if (!clause) throw new Error(`${where}: \`export * from\` hides the names it exports; name every export by hand so docs/api.md can be checked.`);
      if (ts.isNamespaceExport(clause)) names.push(clause.name.text);
      else for (const element of clause.elements) names.push(element.name.text);
    } else if (ts.isExportAssignment(statement)) {
      throw new Error(`${where}: a default export has no name to document; export a named binding instead.`);
    } else if (exported(statement)) {
      if (ts.isVariableStatement(statement)) {
        for (const d of statement.declarationList.declarations) {
          if (!ts.isIdentifier(d.name)) throw new Error(`${where}: export a plain name, not a destructuring pattern.`);
          names.push(d.name.text);
        }
      } else if (
        (ts.isFunctionDeclaration(statement) ||
          ts.isClassDeclaration(statement) ||
          ts.isInterfaceDeclaration(statement) ||
          ts.isTypeAliasDeclaration(statement) ||
          ts.isEnumDeclaration(statement) ||
          ts.isModuleDeclaration(statement)) &&
        statement.name &&
        ts.isIdentifier(statement.name)
      ) {
        names.push(statement.name.text);
      } else {
        throw new Error(`${where}: an export this test cannot name (${ts.SyntaxKind[statement.kind]}).`);
      }
    }
  }
  return names;
}
