import { defineConfig } from 'prisma/config';

// Generation only: the tests give each PrismaClient its own adapter on their database.
export default defineConfig({
  schema: 'schema.prisma',
  datasource: { url: 'postgres://postgres@127.0.0.1:5432/unused' },
});
