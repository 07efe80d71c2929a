# The git tests' repository: a bare repository with branches main and feature and tag v1,
# its commits dated and signed alike everywhere so that their ids are the recorded ones.
set -e
d=$1
rm -rf $d && mkdir -p $d
git init -q --bare -b main $d/repo.git
git init -q -b main $d/work
cd $d/work
git config user.email t@example.org; git config user.name t
export GIT_COMMITTER_DATE="2020-01-01T00:00:00Z" GIT_AUTHOR_DATE="2020-01-01T00:00:00Z"
echo one > a.txt; git add a.txt; git commit -qm one
git tag v1
echo two > a.txt; git commit -qam two
git checkout -qb feature; echo feat > f.txt; git add f.txt; git commit -qm feat; git checkout -q main
git push -q $d/repo.git main feature v1
