/** `s` as a SQL string literal (quotes doubled), for the paths and names the code itself puts in SQL; user values are bound instead. */
export const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;
