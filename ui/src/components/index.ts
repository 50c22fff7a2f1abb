// The admin UI's shared pieces, one per file; screens import them from here.
//
// Building blocks
//   Link          a link inside the app (navigates without a reload)
//   Button        a button: variants, sizes, `busy`
//   Icon          the line icons
//   IconButton    a button that shows only an icon (its label for screen readers)
//   Badge         a small label in a tone
//   Loading       a spinner with a label
//   Empty         what an empty list says instead
//   ErrorText     a message next to what caused it (role alert)
// Forms
//   Field         a labelled control with hint and error
//   TextField     a text input in a Field, tied to its label
//   NewPasswordFields  a new password and its confirmation (createNewPassword: their state)
//   SearchBox     a search input with a hidden label
//   createAction  busy and error of what a form or button does (submitWith: as a form's onSubmit)
//   useId         an id to tie a label or message to its control
// Dialogs
//   Dialog        a modal; its content exists only while open (useDialog: close it from inside)
//   DialogForm    a dialog's form: fields, error, Cancel and a busy submit button
//   Confirm       asks before a change; with askAgain, asks again while the API wants a flag
//   ConfirmDelete "Delete <what>" the API refuses until forced / told to override
//   createConfirmation  the level of a change the API refused (409 details.requires)
// Showing data
//   Loaded        a resource: spinner, error, empty state, else its value (valueOf: read safely)
//   Table         header cells from a column list, a row per item
//   ListTable     a Table of a list kept in the page, with its ListPager
//   createListView, ListPager  a list sorted, filtered and paged in the page; its no-match line and pager
//   Pager         Previous / Next
//   PageHead      a page's title, what it is for, its main action (or a New … button)
//   CopyButton    copies a value, says so
//   Credential    a labelled value with its copy button
//   ShownOnce     what is shown only once (a client secret, an initial password)
//   formatDate    a date for the reader's locale

export { createAction, submitWith, type Action } from './action';
export { Badge } from './Badge';
export { Button, type ButtonProps } from './Button';
export { Confirm, type ConfirmProps } from './Confirm';
export { ConfirmDelete } from './ConfirmDelete';
export { createConfirmation, type Escalation } from './confirmation';
export { CopyButton } from './CopyButton';
export { Credential } from './Credential';
export { Dialog, useDialog } from './Dialog';
export { DialogForm } from './DialogForm';
export { Empty } from './Empty';
export { ErrorText } from './ErrorText';
export { Field } from './Field';
export { formatDate } from './format';
export { Icon } from './Icon';
export { IconButton } from './IconButton';
export { Link } from './Link';
export { createNewPassword, NewPasswordFields, type NewPassword } from './NewPasswordFields';
export { ListPager } from './ListPager';
export { ListTable } from './ListTable';
export { createListView, type ListView } from './listView';
export { Loaded, valueOf } from './Loaded';
export { Loading } from './Loading';
export { PageHead } from './PageHead';
export { Pager } from './Pager';
export { SearchBox } from './SearchBox';
export { ShownOnce } from './ShownOnce';
export { Table, type Column, type TableProps } from './Table';
export { TextField } from './TextField';
export { useId } from './useId';
